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
from pathlib import Path

from conftest import Remote, git

from michi import git as mgit
from michi.errors import GitFailed

ROUNDS = 40


def _pushing_commits(clone: Path, stop: threading.Event) -> threading.Thread:
    """Another clone moving the remote's main on, commit after commit, until `stop` (at most 400)."""

    def run() -> None:
        for n in range(400):
            if stop.is_set():
                return
            git(clone, "commit", "-q", "--allow-empty", "-m", f"other {n}")
            git(clone, "push", "-q", "origin", "HEAD:main")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_fetches_racing_for_the_tracking_ref_each_succeed(remote: Remote, repo: Path) -> None:
    other = remote.clone("other")
    stop = threading.Event()
    pusher = _pushing_commits(other, stop)
    failures: list[str] = []

    def fetching() -> None:
        for _ in range(ROUNDS):
            try:
                mgit.fetch_branch(mgit.open_repo(repo), "origin", "main")
            except GitFailed as exc:
                failures.append(exc.message)

    # Plain git fetches beside michi's, as a user's shell prompt or editor may run them.
    def plain_fetching() -> None:
        for _ in range(ROUNDS):
            subprocess.run(["git", "fetch", "-q", "origin"], cwd=repo, capture_output=True, check=False)

    threads = [threading.Thread(target=fetching), threading.Thread(target=plain_fetching)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    pusher.join(timeout=120)
    assert failures == []
    assert mgit.fetch_branch(mgit.open_repo(repo), "origin", "main") == remote.head()
