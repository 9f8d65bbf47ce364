"""Bench-only: michi's pre-loaded server (ADR 0016) in the foreground, its workers writing each
transaction's timings as `_scale_driver.py` does (`_txn_timings`). Clients reach it as they reach the
real one: `python -m michi` with the same interpreter, import path and MICHI_SERVER_DIR (the build key
leaves out the script's own folder)."""

from __future__ import annotations

import _txn_timings

_txn_timings.install()

from michi.serve import server  # noqa: E402

raise SystemExit(server.main(["--foreground"]))
