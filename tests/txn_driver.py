"""Run one transaction in its own process: `python txn_driver.py REPO NAME [--offline] [--sync]`.

Prints the outcome as JSON; exits with the error's exit code, like the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from michi.config import load
from michi.errors import MichiError
from michi.repo import find_repo
from michi.workflow import Mutation, TxnRequest, run_transaction, sync
from michi.workflow.mutation import allow

for name in ("txnkit:append", "txnkit:stray"):  # its journal entries name them
    allow(name)


def main(argv: list[str]) -> int:
    repo = find_repo(argv[0])
    req = TxnRequest(
        repo=repo,
        config=load(repo.config_file),
        command=f"append {argv[1]}",
        agent="driver",
        offline="--offline" in argv,
        push_all="--push-all" in argv,
    )
    try:
        if "--sync" in argv:
            outcome = sync(req)
        else:
            apply = "txnkit:stray" if "--stray" in argv else "txnkit:append"
            outcome = run_transaction(
                req, Mutation(apply, {"name": argv[1], "refuse_if_present": "--refuse" in argv})
            )
    except MichiError as exc:
        print(json.dumps(exc.to_json()))
        return int(exc.exit_code)
    print(
        json.dumps(
            {
                "result": outcome.result,
                "commit": outcome.commit,
                "pushed": outcome.pushed,
                "notes": outcome.notes,
                "attempts": outcome.attempts,
                "recovered": outcome.recovered,
                "refused": outcome.refused,
                "renumbered": outcome.renumbered,
                "timings": outcome.timings,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
