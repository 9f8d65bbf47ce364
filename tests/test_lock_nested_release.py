"""A nested hold (`michi lock acquire` under a script's lock, here with `--pid P`) has a token of its own,
and each release ends exactly the hold it names (ADR 0003): the inner release never frees the outer lock,
the outer release frees it, and a nested holder still live then is told it lost its hold (exit 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lockkit import bash, michi_on_path

# `probe NAME`: does anyone but us hold the lock? 75 = held, 0 = free (taken and let go at once).
# `rc NAME`: the exit status of the command just before. Both append a line to `log`.
PRELUDE = """
probe() { env -u MICHI_LOCK_TOKEN michi lock run --wait 0 -- true 2>/dev/null; echo "probe $1 $?" >> log; }
rc() { echo "$1 $?" >> log; }
"""

# A command the outer script runs: it takes a nested hold for a long-lived process of its own.
COMMAND = {
    "printed": "michi lock acquire --pid $P > /dev/null",
    "exported": 'eval "$(michi lock acquire --export --pid $P)"',
}

# The outer script runs `command.sh`, whose inner release names no token (either form of COMMAND).
IN_A_COMMAND = (
    """
eval "$(michi lock acquire --export)"
./command.sh
probe after-command
michi lock release; rc outer
probe after-outer
""",
    ["inner 0", "probe in-command 75", "probe after-command 75", "outer 0", "probe after-outer 0"],
)

SCRIPTS = {
    "inner by token, then outer": (
        """
eval "$(michi lock acquire --export)"
inner=$(michi lock acquire --pid $P)
michi lock release --token "$inner"; rc inner
probe after-inner
michi lock release; rc outer
probe after-outer
""",
        ["inner 0", "probe after-inner 75", "outer 0", "probe after-outer 0"],
    ),
    "outer, then inner by token": (
        """
eval "$(michi lock acquire --export)"
inner=$(michi lock acquire --pid $P)
michi lock release; rc outer
probe after-outer
michi --json lock release --token "$inner" > inner.json; rc inner
""",
        ["outer 0", "probe after-outer 0", "inner 4"],
    ),
    "a command's inner release without a token, printed": IN_A_COMMAND,
    "a command's inner release without a token, exported": IN_A_COMMAND,
    "the script's own release is the outer one": (
        """
sleep 300 & P0=$!
eval "$(michi lock acquire --export --pid $P0)"
inner=$(michi lock acquire)
michi lock release; rc outer
probe after-outer
michi --json lock release --token "$inner" > inner.json; rc inner
kill $P0
""",
        ["outer 0", "probe after-outer 0", "inner 4"],
    ),
}


@pytest.mark.parametrize("case", list(SCRIPTS))
def test_each_release_ends_the_hold_it_names(local_repo: Path, tmp_path: Path, case: str) -> None:
    """Before, the nested hold shared the outer's token and a release was told apart by its caller's
    script alone: the inner release freed the outer lock (another process ran beside the script), and the
    script's own release could be taken for the inner one (the lock stayed)."""
    body, expected = SCRIPTS[case]
    form = "exported" if case.endswith("exported") else "printed"
    command = local_repo / "command.sh"
    command.write_text(
        f"#!/bin/bash\n{PRELUDE}\nsleep 300 & P=$!\n{COMMAND[form]}\n"
        "michi lock release; rc inner\nprobe in-command\nkill $P\n"
    )
    command.chmod(0o755)
    script = f"{PRELUDE}\nsleep 300 & P=$!\ntrap 'kill $P 2>/dev/null' EXIT\n{body}"
    result = bash(local_repo, script, michi_on_path(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (local_repo / "log").read_text().splitlines() == expected
    if "inner 4" in expected:  # the nested holder still ran when its hold ended with the outer one
        error = json.loads((local_repo / "inner.json").read_text())["error"]
        assert error["code"] == "lock_lost" and "nested" in error["message"]
    assert not (local_repo / ".michi.lock").exists()
