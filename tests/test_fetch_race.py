"""Fetches racing for one clone's remote-tracking ref (ADR 0004).

A read fetches without the repo lock, and the fetch or push of a SIGKILLed holder outlives it: each can
move `refs/remotes/origin/main` between another fetch's read of it and its write, and git then fails
that fetch ("cannot lock ref ... is at X but expected Y"). That is no unreachable remote: michi's fetch
tries again. Before, a command fetching under the lock failed with exit 5, "cannot reach remote", when
such a process ran beside it.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, git

from michi import git as mgit
from michi.errors import GitFailed
from michi.git import remote as remote_mod

RACES = 3
MAX_ROUNDS = 1000
DEADLINE = 90.0


def _pushing_commits(clone: Path, stop: threading.Event) -> threading.Thread:
    """Another clone moving the remote's main on, commit after commit, until `stop` (at most 2000)."""

    def run() -> None:
        for n in range(2000):
            if stop.is_set():
                return
            git(clone, "commit", "-q", "--allow-empty", "-m", f"other {n}")
            git(clone, "push", "-q", "origin", "HEAD:main")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_fetches_racing_for_the_tracking_ref_each_succeed(
    remote: Remote, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = remote.clone("other")
    stop = threading.Event()
    pusher = _pushing_commits(other, stop)
    failures: list[str] = []
    raced: list[str] = []  # git's refusals michi's fetches met (and tried again)
    network = remote_mod._network

    def watched(*args: Any, **kw: Any) -> tuple[int, str, str]:
        status, out, err = network(*args, **kw)
        if remote_mod._TRACKING_RACED.search(err):
            raced.append(err)
        return status, out, err

    monkeypatch.setattr(remote_mod, "_network", watched)
    done = threading.Event()

    def fetching() -> None:
        # Until the race was met a few times (it needs both fetchers on the cores at once), bounded.
        deadline = time.monotonic() + DEADLINE
        for _ in range(MAX_ROUNDS):
            if len(raced) >= RACES or time.monotonic() > deadline:
                break
            try:
                mgit.fetch_branch(mgit.open_repo(repo), "origin", "main")
            except GitFailed as exc:
                failures.append(exc.message)
        done.set()

    # Plain git fetches beside michi's, as a user's shell prompt or editor may run them.
    def plain_fetching() -> None:
        while not done.is_set():
            subprocess.run(["git", "fetch", "-q", "origin"], cwd=repo, capture_output=True, check=False)

    threads = [threading.Thread(target=fetching), threading.Thread(target=plain_fetching)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE + 60)
    stop.set()
    pusher.join(timeout=120)
    assert failures == []
    assert raced, "the fetches never raced: this run tested nothing"
    assert mgit.fetch_branch(mgit.open_repo(repo), "origin", "main") == remote.head()
