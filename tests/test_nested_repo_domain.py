"""A domain another clone pushed where this clone has a repository of its own (a folder with its own
`.git`): michi never writes into it (ADR 0006). The local branch stays where it was, with a note naming
the domain and the fix; the tasks stay on the task branch, and nothing of the nested repository changes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import Remote, git

from michi import git as mgit
from michi.git.checkout import MAX_PATHS


def _nested_repo(folder: Path) -> None:
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "mine.txt").write_text("mine\n")
    git(folder, "add", "mine.txt")
    git(folder, "commit", "-qm", "nested")


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file, folder and link under `folder` (its `.git` too): mode and bytes."""
    found: dict[str, tuple[int, bytes]] = {}
    for where, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(where, name)
            st = os.lstat(path)
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            found[str(path.relative_to(folder))] = (st.st_mode, data)
    return found


def test_a_pushed_domain_is_never_written_into_a_nested_repository(
    remote: Remote, cli, tmp_path: Path
) -> None:
    x = remote.clone("x")
    assert cli(x, "init").exit_code == 0
    y = remote.clone("y")
    _nested_repo(y / "sub")
    before, status = _snapshot(y / "sub"), git(y, "status", "--porcelain")
    (x / "sub").mkdir()
    assert cli(x, "task", "add", "--domain", "sub", "in sub").exit_code == 0

    added = cli(y, "--json", "task", "add", "from y")
    assert added.exit_code == 0, added.stderr
    notes = added.json()["transaction"]["notes"]
    assert len(notes) == 1 and "\n" not in notes[0], notes
    assert "sub is another git repository" in notes[0] and "domain sub" in notes[0]
    assert "move that repository out of this work tree" in notes[0] and "michi sync" in notes[0]
    assert _snapshot(y / "sub") == before
    assert git(y, "status", "--porcelain") == status
    listed = cli(y, "--json", "task", "list", "--all", "--no-fetch").json()
    assert {(t["domain"], t["description"]) for t in listed} == {("sub", "in sub"), (".", "from y")}

    # The user's `git commit -a` on the branch left behind deletes none of the tasks.
    (y / "README.md").write_text("edited\n")
    git(y, "commit", "-qam", "mine")
    synced = cli(y, "sync")
    assert synced.exit_code == 0 and "domain sub" in synced.stderr
    assert _snapshot(y / "sub") == before
    tip = remote.head()
    assert git(y, "ls-tree", "-r", "--name-only", tip, "--", "sub").startswith("sub/.tasks/")
    assert git(y, "diff", "--name-only", "HEAD^", "HEAD") == "README.md"  # the user's own commit only

    # Moved out of the work tree, the nested repository no longer stops the branch: tasks and the user's
    # commit are both there.
    shutil.move(y / "sub", tmp_path / "sub-elsewhere")
    assert cli(y, "sync").exit_code == 0
    assert git(y, "rev-parse", "HEAD^") == tip and (y / "README.md").read_text() == "edited\n"
    assert git(y, "status", "--porcelain") == ""
    assert [p.parent.parent.name for p in (y / "sub").rglob("*.json")] == [".tasks"]
    assert _snapshot(tmp_path / "sub-elsewhere") == before


def test_a_move_past_the_per_path_limit_is_refused_too(tmp_path: Path) -> None:
    """More paths than the per-path move takes go to `read-tree`, which writes into a nested repository
    as well: the check comes first."""
    work = tmp_path / "w"
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    (work / "README.md").write_text("hello\n")
    git(work, "add", "README.md")
    git(work, "commit", "-qm", "one")
    old = git(work, "rev-parse", "HEAD")
    env = {**os.environ, "GIT_INDEX_FILE": str(work / ".git" / "scratch-index")}
    git(work, "read-tree", old, env=env)
    blob = git(work, "hash-object", "-w", "README.md")
    listing = "".join(f"100644 {blob}\tlib/sub/.tasks/{i:02x}/n{i}.json\n" for i in range(MAX_PATHS + 1))
    subprocess.run(
        ["git", "update-index", "--index-info"], cwd=work, input=listing, text=True, check=True, env=env
    )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=work, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    new = git(work, "commit-tree", tree, "-p", old, "-m", "many")
    (work / "lib").mkdir()
    _nested_repo(work / "lib" / "sub")
    before, index = _snapshot(work / "lib"), (work / ".git" / "index").read_bytes()

    refused = mgit.read_tree_update(mgit.open_repo(work), old, new)
    assert refused is not None
    assert "lib/sub is another git repository" in refused and "domain lib/sub" in refused
    assert _snapshot(work / "lib") == before
    assert (work / ".git" / "index").read_bytes() == index
