"""One michi transaction in a fresh process (what an agent pays): `python _txn_driver.py REPO NAME`.
Prints the engine's own timings as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from michi.config import load
from michi.repo import find_repo
from michi.workflow import Mutation, TxnRequest, run_transaction

repo = find_repo(sys.argv[1])
outcome = run_transaction(
    TxnRequest(repo=repo, config=load(repo.config_file), command="bench", agent=None),
    Mutation("_txnkit:write_one", {"name": sys.argv[2]}),
)
print(json.dumps(outcome.timings))
