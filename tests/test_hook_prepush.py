"""The pre-push hook `michi hook install` writes beside the pre-commit hook (ADR 0005): a push carrying
commits michi made offline, whose task ids are provisional (ADR 0007), is refused with "run `michi sync`
first"; michi's own pushes and plain pushes pass without starting Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, Remote, git
from txnkit import assert_exactly_once

from michi.atomic import MAX_STATE_BYTES
from michi.hook import install, prepush, script
from michi.repo import find_repo
from michi.workflow.journal import OFFLINE, Journal, PushProcess

Cli = Callable[..., CliResult]
OLD_HOOK = '#!/bin/sh\n# the team\'s own pre-push hook\ncat >> "$HOOK_LOG"\nexit "${HOOK_EXIT:-0}"\n'


@pytest.fixture
def ready(cli: Cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    install.install(find_repo(repo))
    return repo


def _push(clone: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "-q", *args, "origin", "HEAD"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def _commit(clone: Path, name: str) -> None:
    (clone / name).write_text(f"{name}\n")
    git(clone, "add", name)
    git(clone, "commit", "-qm", f"my {name}")


def _offline_behind_theirs(cli: Cli, remote: Remote, ready: Path) -> str:
    """An offline add, the same id taken by another clone, the user's `git pull --rebase`: the uuid."""
    mine = cli(ready, "task", "add", "mine offline", "--offline", "--json").json()
    assert cli(remote.clone("other"), "task", "add", "theirs", "--json").json()["id"] == mine["id"] == 2
    _commit(ready, "code.txt")
    git(ready, "pull", "-q", "--rebase", "origin", "main")
    return str(mine["uuid"])


def test_a_push_of_unsynced_offline_work_is_refused_until_michi_sync(
    cli: Cli, remote: Remote, ready: Path
) -> None:
    uuid = _offline_behind_theirs(cli, remote, ready)
    before = remote.head()
    refused = _push(ready)
    assert refused.returncode != 0
    said = [line for line in refused.stderr.splitlines() if line.startswith("michi:")]
    assert len(said) == 1 and "run `michi sync` first" in said[0], refused.stderr
    assert remote.head() == before  # nothing landed
    synced = cli(ready, "sync", "--json").json()
    assert [(r["uuid"], r["old"], r["new"]) for r in synced["renumbered"]] == [(uuid, 2, 3)]
    pushed = _push(ready)
    assert pushed.returncode == 0, pushed.stderr
    assert git(remote.bare, "log", "-1", "--format=%s", "main") == "my code.txt"
    listed = cli(remote.clone("reader"), "task", "list", "--all", "--json").json()
    assert sorted((t["id"], t["description"]) for t in listed) == [
        (1, "one"),
        (2, "theirs"),
        (3, "mine offline"),
    ]
    assert_exactly_once(remote.bare)


def test_no_verify_skips_the_hook_and_michi_repairs_after(cli: Cli, remote: Remote, ready: Path) -> None:
    uuid = _offline_behind_theirs(cli, remote, ready)
    assert _push(ready, "--no-verify").returncode == 0
    synced = cli(ready, "sync", "--json").json()
    assert [(r["uuid"], r["old"], r["new"]) for r in synced["renumbered"]] == [(uuid, 2, 3)]
    assert cli(ready, "doctor", "--fetch", "--json").json()["problems"] == []


def test_michis_own_pushes_and_plain_pushes_start_no_python(
    cli: Cli, remote: Remote, ready: Path, tmp_path: Path
) -> None:
    """The script answers them itself: michi's push is named in the journal by its process (ADR 0004);
    with no journal there is no offline work. Only a push with offline work pending starts Python."""
    started = tmp_path / "started"
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho x >> "{started}"\nexec "{sys.executable}" "$@"\n')
    fake.chmod(0o755)
    hook = ready / ".git" / "hooks" / "pre-push"
    hook.write_text(script.render_push(python=str(fake)))
    assert cli(ready, "task", "add", "online").exit_code == 0  # michi's own push, through the hook
    _commit(ready, "code.txt")
    assert _push(ready).returncode == 0
    assert not started.exists()
    cli(ready, "task", "add", "mine offline", "--offline")
    assert cli(ready, "sync").exit_code == 0  # michi's push while the journal holds offline work
    assert not started.exists()
    cli(ready, "task", "add", "again offline", "--offline")
    refused = _push(ready)
    assert refused.returncode != 0 and "run `michi sync` first" in refused.stderr
    assert started.read_text() == "x\n"


def test_a_chained_pre_push_hook_gets_the_ref_lines_and_comes_back(
    cli: Cli, remote: Remote, ready: Path, tmp_path: Path
) -> None:
    hooks = ready / ".git" / "hooks"
    install.uninstall(find_repo(ready))
    (hooks / "pre-push").write_text(OLD_HOOK)
    (hooks / "pre-push").chmod(0o755)
    result = cli(ready, "--json", "hook", "install").json()
    assert result["push_chained"] == str(hooks / script.PUSH_CHAINED)
    log = tmp_path / "log"
    _commit(ready, "code.txt")
    tip = git(ready, "rev-parse", "HEAD")
    assert _push(ready, env={"HOOK_LOG": str(log)}).returncode == 0
    assert log.read_text() == f"HEAD {tip} refs/heads/main {git(ready, 'rev-parse', 'HEAD~1')}\n"
    cli(ready, "task", "add", "mine offline", "--offline")
    assert _push(ready, env={"HOOK_LOG": str(log), "HOOK_EXIT": "3"}).returncode != 0  # it can still refuse
    assert cli(ready, "hook", "uninstall").exit_code == 0
    assert (hooks / "pre-push").read_text() == OLD_HOOK
    assert sorted(p.name for p in hooks.iterdir() if "michi" in p.name) == []


def test_a_linked_work_tree_is_checked_too(cli: Cli, remote: Remote, ready: Path, tmp_path: Path) -> None:
    """Its `.git` is a file: the script cannot see the journal, and Python finds it in the common dir."""
    cli(ready, "task", "add", "mine offline", "--offline")
    linked = tmp_path / "linked"
    git(ready, "worktree", "add", "-q", "-b", "side", str(linked), "main")
    refused = _push(linked)
    assert refused.returncode != 0 and "run `michi sync` first" in refused.stderr
    assert git(remote.bare, "branch", "--list", "side") == ""


def test_push_check_through_the_cli_says_it_in_json(cli: Cli, ready: Path) -> None:
    cli(ready, "task", "add", "mine offline", "--offline")
    line = f"refs/heads/main {git(ready, 'rev-parse', 'HEAD')} refs/heads/main {'0' * 40}\n"
    proc = subprocess.run(
        [sys.executable, "-m", "michi", "--json", "hook", "push-check", "origin"],
        cwd=ready,
        input=line,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert (error["code"], error["carried"]) == ("offline_unsynced", 1)
    assert "run `michi sync` first" in error["message"]


def test_the_hooks_mirrors_match_michis_own_facts(tmp_path: Path) -> None:
    state = tmp_path / ".git" / "michi"
    journal = Journal(state)
    assert journal.path == tmp_path / ".git" / prepush.JOURNAL
    assert f".git/{prepush.JOURNAL}" == script.PUSH_JOURNAL
    assert prepush.OFFLINE == OFFLINE
    assert prepush.MAX_STATE_BYTES == MAX_STATE_BYTES
    from michi.workflow.journal import Entry
    from michi.workflow.mutation import Mutation

    entry = Entry("ab12", Mutation("michi.tasks.create:add", {}), "task add x", None, OFFLINE)
    journal.save([entry], PushProcess(pid=4242, start=1.0, host="h", boot_id="b"))
    assert f"{script.PUSH_NAMED}4242," in journal.path.read_text()
    assert prepush.pending(str(tmp_path / ".git"), {prepush.GIT_PID_ENV: "4242"}) == []
    assert prepush.pending(str(tmp_path / ".git"), {prepush.GIT_PID_ENV: "4243"}) == ["ab12"]


def test_a_missing_interpreter_fails_closed_when_there_is_offline_work(cli: Cli, ready: Path) -> None:
    hook = ready / ".git" / "hooks" / "pre-push"
    hook.write_text(script.render_push(python="/nonexistent/python", roots=[]))
    _commit(ready, "code.txt")
    assert _push(ready, env={"PATH": "/usr/bin:/bin"}).returncode == 0  # no journal: nothing to check
    cli(ready, "task", "add", "mine offline", "--offline")
    proc = _push(ready, env={"PATH": "/usr/bin:/bin"})  # and no `michi` on PATH either
    assert proc.returncode != 0
    said = [line for line in proc.stderr.splitlines() if line.startswith("michi:")]
    assert len(said) == 1 and "pre-push hook cannot find michi" in said[0] and "michi hook install" in said[0]
