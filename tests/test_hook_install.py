"""`michi hook install` / `uninstall`: where the hook goes, chaining the hook that was there, and putting
it back exactly (ADR 0005)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, git
from test_hook_support import Holder, commit

from michi.hook import install, script
from michi.repo import find_repo

Cli = Callable[..., CliResult]
OLD_HOOK = '#!/bin/sh\n# the team\'s own hook\necho ran >> "$HOOK_MARK"\nexit "${HOOK_EXIT:-0}"\n'


def test_install_writes_an_executable_hook_and_uninstall_removes_it(cli: Cli, local_repo: Path) -> None:
    result = cli(local_repo, "--json", "hook", "install")
    assert result.exit_code == 0, result.stderr
    hook = local_repo / ".git" / "hooks" / "pre-commit"
    push = hook.with_name("pre-push")
    assert result.json() == {
        "hook": str(hook),
        "chained": None,
        "refreshed": False,
        "push_hook": str(push),
        "push_chained": None,
    }
    assert script.is_michis(hook) and os.access(hook, os.X_OK)
    assert script.is_michis(push) and os.access(push, os.X_OK)
    again = cli(local_repo, "hook", "install")
    assert again.exit_code == 0 and again.stdout.startswith("Refreshed michi's pre-commit hook")
    assert cli(local_repo, "hook", "uninstall").exit_code == 0
    assert not hook.exists() and not push.exists()
    gone = cli(local_repo, "--json", "hook", "uninstall")
    assert gone.exit_code == 0 and gone.json()["removed"] is False


def test_existing_hook_is_chained_said_so_and_restored_exactly(
    cli: Cli, local_repo: Path, tmp_path: Path
) -> None:
    hooks = local_repo / ".git" / "hooks"
    old = hooks / "pre-commit"
    old.write_text(OLD_HOOK)
    old.chmod(0o750)
    before = os.stat(old)
    result = cli(local_repo, "hook", "install")
    assert result.exit_code == 0
    assert "previous pre-commit hook is kept at" in result.stdout and "still runs" in result.stdout
    assert script.is_michis(old)

    mark = tmp_path / "mark"
    env = {"HOOK_MARK": str(mark)}
    assert commit(local_repo, env=env).returncode == 0
    assert mark.read_text() == "ran\n"  # the chained hook ran after michi's
    assert commit(local_repo, env={**env, "HOOK_EXIT": "3"}).returncode != 0  # and can still refuse
    with Holder(local_repo):
        proc = commit(local_repo, env=env)
    assert proc.returncode != 0 and "commit refused" in proc.stderr
    assert mark.read_text() == "ran\nran\n"  # michi refused first: the chained hook did not run

    assert "restored your previous one" in cli(local_repo, "hook", "uninstall").stdout
    after = os.stat(old)
    assert old.read_text() == OLD_HOOK
    assert (after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_ino, 0o750)
    assert sorted(p.name for p in hooks.iterdir() if "michi" in p.name) == []


def test_a_chained_symlink_hook_comes_back_as_the_same_symlink(local_repo: Path) -> None:
    hooks = local_repo / ".git" / "hooks"
    (hooks / "team-hook.sh").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-commit").symlink_to("team-hook.sh")
    repo = find_repo(local_repo)
    assert install.install(repo).chained == str(hooks / script.CHAINED)
    assert commit(local_repo).returncode == 0
    install.uninstall(repo)
    assert os.readlink(hooks / "pre-commit") == "team-hook.sh"


def test_install_refuses_when_a_chained_hook_is_in_the_way(cli: Cli, local_repo: Path) -> None:
    hooks = local_repo / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / script.CHAINED).write_text("#!/bin/sh\nexit 0\n")
    result = cli(local_repo, "hook", "install")
    assert result.exit_code == 4
    assert "is in the way" in result.stderr
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"


def test_core_hooks_path_is_honoured(cli: Cli, local_repo: Path) -> None:
    git(local_repo, "config", "core.hooksPath", "team-hooks")
    assert cli(local_repo, "hook", "install").exit_code == 0
    assert script.is_michis(local_repo / "team-hooks" / "pre-commit")
    assert not (local_repo / ".git" / "hooks" / "pre-commit").exists()
    with Holder(local_repo):
        proc = commit(local_repo)
    assert proc.returncode != 0 and "commit refused" in proc.stderr


def test_linked_worktree_shares_the_hook_and_the_lock(cli: Cli, local_repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(local_repo, "worktree", "add", "-q", "-b", "side", str(linked))
    result = cli(linked, "--json", "hook", "install")
    assert result.exit_code == 0
    assert result.json()["hook"] == str(local_repo.resolve() / ".git" / "hooks" / "pre-commit")
    with Holder(local_repo) as holder:  # the lock lives at the main work tree's top
        proc = commit(linked)
    assert proc.returncode != 0 and f"PID {holder.pid}" in proc.stderr
    assert commit(linked).returncode == 0


def test_a_missing_interpreter_fails_closed(local_repo: Path) -> None:
    hook = local_repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(script.render(python="/nonexistent/python", roots=[]))
    hook.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin"}  # and no `michi` on PATH either
    proc = commit(local_repo, env=env)
    assert proc.returncode != 0
    assert "cannot find michi (not importable by /nonexistent/python, none on PATH)" in proc.stderr
    assert "michi hook install" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["michi"])
def test_the_script_names_where_michi_lives(name: str) -> None:
    origin = __import__(name).__file__
    assert origin is not None
    assert str(Path(origin).resolve().parents[1]) in script.import_roots()
