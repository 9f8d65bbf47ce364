"""A round built on the remote tip fetched without the lock (ADR 0004): the checkout it moves afterwards
takes the other clones' changes along with its own, and nothing of the user's is touched."""

from __future__ import annotations

from pathlib import Path

from conftest import Remote, git, run_michi


def _add(clone: Path, what: str) -> dict[str, object]:
    out = run_michi(clone, "--json", "task", "add", what)
    assert out.exit_code == 0, out.stdout + out.stderr
    return out.json()


def test_the_checkout_moves_by_what_the_fetch_between_rounds_brought(remote: Remote) -> None:
    one = remote.clone("one")
    assert run_michi(one, "init").exit_code == 0
    two = remote.clone("two")
    _add(one, "first")
    (one / "notes.txt").write_text("staged\n")
    git(one, "add", "notes.txt")
    (one / "README.md").write_text("unstaged\n")
    theirs = [_add(two, f"theirs {n}") for n in range(2)]  # one's last-known tip is stale now
    mine = _add(one, "mine")  # refused once, then built on the tip fetched between the rounds
    ours = _add(one, "ours")  # a refused push lately: fetched before the lock
    for task in [*theirs, mine, ours]:
        assert run_michi(one, "--json", "task", "show", str(task["id"])).exit_code == 0
    assert git(one, "rev-parse", "HEAD") == remote.head()
    # index and work tree are HEAD's, but for the user's own two changes, which are as they were
    assert git(one, "diff", "--name-only") == "README.md"
    assert git(one, "diff", "--cached", "--name-only") == "notes.txt"
    assert (one / "README.md").read_text() == "unstaged\n"
    listed = git(one, "ls-files", "--", ".tasks").splitlines()
    assert listed == git(one, "ls-tree", "-r", "--name-only", "HEAD", "--", ".tasks").splitlines()
    assert all((one / path).is_file() for path in listed)
    assert git(one, "diff", "--stat", "HEAD", "--", ".tasks") == ""
