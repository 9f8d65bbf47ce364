"""Git processes started while michi waits for its turn yield the CPU (ADR 0015): real git, real `nice`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from michi import git
from michi.git import courtesy

pytestmark = pytest.mark.skipif(shutil.which("nice") is None, reason="no `nice` on PATH")


def _niceness(repo: Path) -> int:
    """The niceness a git process michi starts runs at (a shell alias that prints its own)."""
    status, out, err = git.open_repo(repo).execute(["-c", "alias.niceness=!nice", "niceness"])
    assert status == 0, err
    return int(out)


def test_git_started_while_yielding_runs_at_a_lower_priority(repo: Path) -> None:
    plain = _niceness(repo)
    with git.yielding():
        lowered = _niceness(repo)
    assert lowered == min(19, plain + courtesy.NICENESS)
    assert _niceness(repo) == plain  # only inside it


def test_yielding_can_be_switched_off_for_one_step(repo: Path) -> None:
    plain = _niceness(repo)
    with git.yielding(), git.yielding(False):  # a turn's holder: the other clones wait for it
        assert _niceness(repo) == plain
