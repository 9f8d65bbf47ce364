"""Test mutations for the transaction engine: importable by every process a test starts (crash recovery
re-applies a journaled mutation in another process, so these cannot be closures). Also the remote-side
checks and hooks the exactly-once tests share."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from michi.errors import Conflict
from michi.workflow import ApplyContext, Change, TaskTree

LOG = ".tasks/log.json"


def append(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """Append a name to one shared file: every clone's op conflicts with every other's, and a doubled
    application would show as the name twice."""
    raw = tree.read(LOG)
    names: list[str] = json.loads(raw) if raw else []
    name = str(params["name"])
    witness = os.environ.get("TXNKIT_WITNESS")  # each application: was the clone's lock held then?
    if witness:
        held = Path(os.environ["TXNKIT_LOCK"]).exists()
        with open(witness, "a") as out:
            out.write(f"{name} {'locked' if held else 'free'}\n")
    if params.get("refuse_if_present") and name in names:
        raise Conflict(f"{name} is already there")
    names.append(name)
    trailers = {"Michi-Item": name}
    if os.environ.get("TXNKIT_STAMP"):  # the clock the application read, as a claim's lease or `modified`
        trailers["Txnkit-Now"] = repr(ctx.now)
    return Change(
        subject=f"append {name}",
        writes={LOG: (json.dumps(names, indent=0) + "\n").encode()},
        trailers=trailers,
        result={"name": name, "count": len(names)},
    )


def stray(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    """A change outside michi's own files, which the engine must refuse (a bug in an apply function)."""
    return Change(subject="stray", writes={"README.md": b"overwritten\n"})


def noop(tree: TaskTree, params: Mapping[str, Any], ctx: ApplyContext) -> Change:
    return Change(subject="nothing", result={"seen": tree.commit})


# --- the remote, as the tests of exactly-once see it -------------------------------------------------


DRIVER = Path(__file__).with_name("txn_driver.py")


def drive(
    repo: Path, name: str, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One transaction in its own process (`txn_driver.py`), run to the end."""
    return subprocess.run(
        [sys.executable, str(DRIVER), str(repo), name, *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def start(repo: Path, name: str, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """One transaction in its own process, started in the background."""
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(repo), name, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def michi_commits(bare: Path, branch: str = "main") -> list[tuple[str, str]]:
    """(oid, full message) of every michi commit on the remote branch, newest first."""
    out = _git(bare, "log", "-z", "--format=%H%n%B", branch)
    records = [r.strip("\n").partition("\n") for r in out.split("\0") if r.strip()]
    return [(oid, message) for oid, _, message in records if message.startswith("michi: ")]


def txn_of(message: str) -> str | None:
    found = re.search(r"^Michi-Txn: *([0-9a-f]+) *$", message, re.MULTILINE)
    return found.group(1) if found else None


def assert_exactly_once(bare: Path, branch: str = "main") -> None:
    """The invariant of ADR 0004: no `Michi-Txn` value on two commits of the remote branch, and every
    task file a commit changes goes up by exactly one version (new files start at 1)."""
    commits = michi_commits(bare, branch)
    txns = Counter(txn_of(m) for _oid, m in commits)
    doubled = {t: n for t, n in txns.items() if n > 1}
    assert not doubled, f"transactions on more than one commit: {doubled}"
    assert None not in txns, "a michi commit without a Michi-Txn trailer"
    for oid, message in commits:
        changed = _git(bare, "diff-tree", "-r", "-z", "--no-commit-id", "--name-status", "--root", oid)
        fields = [f for f in changed.split("\0") if f]
        for status, path in zip(fields[0::2], fields[1::2], strict=True):
            if "/.tasks/" not in f"/{path}" or not path.endswith(".json") or status == "D":
                continue
            new = json.loads(_git(bare, "show", f"{oid}:{path}")).get("michi_version")
            if new is None:
                continue  # not a task (the engine tests' shared log)
            old = json.loads(_git(bare, "show", f"{oid}^:{path}"))["michi_version"] if status == "M" else 0
            subject = message.splitlines()[0]
            assert new == old + 1, f"{subject} ({oid[:8]}) took {path} from version {old} to {new}"


def gated_hook(bare: Path, signals: Path) -> None:
    """A pre-receive hook that numbers the pushes it sees (`reached.N`), refuses push N when the test
    made `refuse.N`, and otherwise holds push N until the test makes `gate.N` (or `open`), for at most
    about two minutes."""
    signals.mkdir(exist_ok=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f"""#!/bin/sh
d='{signals}'
n=$(ls "$d" | grep -c '^reached\\.')
n=$((n + 1))
: > "$d/reached.$n"
if [ -e "$d/refuse.$n" ]; then echo "flaky remote says no" >&2; exit 1; fi
i=0
while [ ! -e "$d/gate.$n" ] && [ ! -e "$d/open" ]; do
  sleep 0.01; i=$((i + 1))
  [ $i -lt 12000 ] || exit 1  # a failed test never opens the gate: give up, leave no process behind
done
"""
    )
    hook.chmod(0o755)


def detached_server(clone: Path, root: Path) -> None:
    """Run the clone's remote side in its own session, as a server over ssh or https is: ending a
    `git push` then cannot end the remote's half, which may still land after the client is gone."""
    wrapper = root / "receive-pack-elsewhere.sh"
    wrapper.write_text('#!/bin/sh\nexec setsid git-receive-pack "$@"\n')
    wrapper.chmod(0o755)
    _git(clone, "config", "remote.origin.receivepack", str(wrapper))
