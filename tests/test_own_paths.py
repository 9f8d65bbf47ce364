"""michi's commits touch only michi's files: task files, `.michi/*` and (at init) `.michi.toml` and
`.tasks/.keep`. A user's file or symlink named `.tasks`, or an imported domain naming a file, is refused,
never replaced by a folder (ADR 0004, ADR 0006)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, git, spawn_michi

from michi import git as mgit
from michi.errors import MichiError
from michi.git.objects import NotMichisPath
from michi.tasks.model import parse_tw_date
from michi.workflow.owned import safe_path

# Task files of both layouts (ADR 0006): flat `.tasks/<uuid>.json`, fan-out `.tasks/<uuid[:2]>/<uuid>.json`.
MICHIS = re.compile(
    r"(?:.+/)?\.tasks/(?:([0-9a-f]{2})/(?=\1))?[0-9a-f-]{36}\.json|\.michi/[^/]+|\.michi\.toml|\.tasks/\.keep"
)


def michi_commits(bare: Path) -> list[str]:
    return git(bare, "log", "--format=%H", "--grep=^michi: ", "main").splitlines()


def touched(bare: Path, commit: str) -> list[str]:
    out = git(bare, "diff-tree", "-r", "--no-commit-id", "--name-only", "--root", commit)
    return out.splitlines()


@pytest.mark.parametrize("first", [("init",), ()], ids=["fan-out", "flat-then-migrate"])
def test_every_changing_command_touches_only_michis_paths(
    cli, remote: Remote, repo: Path, tmp_path: Path, first: tuple[str, ...]
) -> None:
    """`init` makes a fan-out repository; without it the tasks are flat (a repository from before the
    fan-out layout) until `migrate`, halfway through, moves them."""
    (repo / "libs" / "auth" / ".tasks").mkdir(parents=True)
    (repo / "libs" / "auth" / "code.py").write_text("print()\n")
    git(repo, "add", "libs")
    git(repo, "commit", "-qm", "user code")
    git(repo, "push", "-q", "origin", "main")
    steps = [
        *([first] if first else []),
        ("task", "add", "one", "-t", "a"),
        ("task", "add", "two", "--domain", "libs/auth", "--depends", "1"),
        ("task", "modify", "1", "--description", "uno", "-p", "H"),
        ("task", "annotate", "1", "a note"),
        ("task", "start", "1"),
        ("task", "stop", "1"),
        ("task", "review", "1"),
        ("task", "done", "1"),
        ("--agent", "bot", "task", "claim", "2", "--ttl", "1"),
        ("--agent", "bot", "task", "renew", "2"),
        ("--agent", "bot", "task", "release", "2"),
        ("--agent", "bot", "task", "next", "--claim", "--all", "--ttl", "1"),
        ("task", "add", "three", "--offline"),
        ("sync",),
        ("migrate",),
        ("task", "delete", "3"),
    ]
    for step in steps:
        result = cli(repo, *step, "--json")
        assert result.exit_code == 0, (step, result.stdout, result.stderr)
    expires = parse_tw_date(cli(repo, "task", "show", "2", "--json").json()["claim_expires"])
    time.sleep(max(0.0, expires + 1 - time.time()))  # the clock must pass the claim's expiry: reap needs it
    reaped = cli(repo, "task", "reap", "--json")
    assert reaped.exit_code == 0 and [t["id"] for t in reaped.json()["tasks"]] == [2]
    export = tmp_path / "tw.json"
    records = cli(repo, "export", "--all").json()
    records[0]["description"] = "changed in an import"
    records.append(
        {
            "uuid": "aaaaaaaa-1111-4111-8111-111111111111",
            "description": "new",
            "status": "pending",
            "entry": "20250101T000000Z",
            "michi_domain": "libs/auth",
        }
    )
    export.write_text(json.dumps(records))
    assert cli(repo, "import", str(export), "--json").exit_code == 0
    commits = michi_commits(remote.bare)
    assert len(commits) >= len(steps) - (1 if first else 0)  # migrate on a fan-out repository: no commit
    for commit in commits:
        paths = touched(remote.bare, commit)
        assert paths and all(MICHIS.fullmatch(p) for p in paths), (commit, paths)
    assert git(remote.bare, "show", "main:libs/auth/code.py") == "print()"
    every = {p for commit in commits for p in touched(remote.bare, commit) if p.endswith(".json")}
    flat = {p for p in every if p.split("/")[-2] == ".tasks"}
    assert bool(flat) is not bool(first)  # both layouts were written when the repository began flat
    assert every - flat


@pytest.fixture
def with_user_files(cli, remote: Remote, repo: Path, tmp_path: Path) -> Path:
    """A clone whose user committed a symlink `svc/.tasks`, a file `docs/.tasks`, a symlinked folder."""
    assert cli(repo, "init").exit_code == 0
    (tmp_path / "outside").mkdir()
    (repo / "svc").mkdir()
    (repo / "svc" / ".tasks").symlink_to(tmp_path / "outside")
    (repo / "docs").mkdir()
    (repo / "docs" / ".tasks").write_text("USER NOTES, not michi's\n")
    (repo / "linked").symlink_to("docs")
    git(repo, "add", "svc", "docs", "linked")
    git(repo, "commit", "-qm", "user files")
    git(repo, "push", "-q", "origin", "main")
    return repo


def _unchanged(remote: Remote, before: str, repo: Path) -> None:
    assert remote.head() == before
    assert git(remote.bare, "cat-file", "-t", "main:docs/.tasks") == "blob"
    assert git(remote.bare, "cat-file", "-p", "main:svc/.tasks").endswith("outside")
    assert (repo / "docs" / ".tasks").read_text() == "USER NOTES, not michi's\n"
    assert (repo / "svc" / ".tasks").is_symlink()


def test_a_tasks_file_or_symlink_is_no_domain(cli, with_user_files: Path, remote: Remote) -> None:
    repo, before = with_user_files, remote.head()
    for cwd, args in (
        (repo / "svc", ()),
        (repo, ("--domain", "svc")),
        (repo, ("--domain", "docs")),
        (repo, ("--domain", "linked")),
    ):
        result = cli(cwd, "task", "add", "x", *args, "--json")
        assert result.exit_code == 2, (cwd, args, result.stdout)
        assert result.json()["error"]["code"] == "bad_domain"
    # A file named .tasks is not a domain: from docs/ the task goes to the nearest real one (the root).
    added = cli(repo / "docs", "task", "add", "from docs", "--json")
    assert added.exit_code == 0 and added.json()["domain"] == "."
    uuid = added.json()["uuid"]
    assert touched(remote.bare, remote.head()) == [".michi/last-id", f".tasks/{uuid[:2]}/{uuid}.json"]
    assert git(remote.bare, "rev-parse", "main~1") == before
    _unchanged(remote, remote.head(), repo)


def _import_into(cli, repo: Path, tmp_path: Path, domain: str) -> Any:
    """`michi import` of one Taskwarrior task whose `michi_domain` is `domain`."""
    source = tmp_path / "tw.json"
    record = {
        "uuid": "aaaaaaaa-1111-4111-8111-111111111111",
        "description": "x",
        "status": "pending",
        "entry": "20250101T000000Z",
        "michi_domain": domain,
    }
    source.write_text(json.dumps([record]))
    return cli(repo, "import", str(source), "--json")


def test_imported_domains_get_the_domain_checks(
    cli, with_user_files: Path, remote: Remote, tmp_path: Path
) -> None:
    repo, before = with_user_files, remote.head()
    for domain in ("README.md", "docs", "svc", "linked", "../elsewhere", "/etc", ".git", "libs/none"):
        result = _import_into(cli, repo, tmp_path, domain)
        assert result.exit_code == 2, (domain, result.stdout)
        error = result.json()["error"]
        assert error["code"] == "bad_domain" and "aaaaaaaa-1111" in error["message"], domain
    _unchanged(remote, before, repo)
    assert git(remote.bare, "show", "main:README.md") == "hello"


# Folder names git itself refuses to check out (its `verify_path`: `.git` in any case, with NTFS's trailing
# dots and spaces or short name, or HFS's ignorable characters): a task file under one would make every
# clone's checkout of the task branch fail, though a Linux work tree can hold such a folder.
GIT_REFUSES = [
    ".GIT",
    "sub/.Git",
    "GIT~1",
    "git~1",
    ".git.",
    ".git ",
    ".git. .",
    "x/.git::$INDEX_ALLOCATION",
    ".g\u200cit",
    "a\\.git",
]


def _refused_as_domain(cli, repo: Path, tmp_path: Path, name: str) -> None:
    """`name` refused as a domain, by `--domain` and by an import naming it (`bad_domain`, exit 2)."""
    added = cli(repo, "task", "add", "x", "--domain", name, "--json")
    assert added.exit_code == 2 and added.json()["error"]["code"] == "bad_domain", added.stdout
    imported = _import_into(cli, repo, tmp_path, name)
    assert imported.exit_code == 2 and imported.json()["error"]["code"] == "bad_domain", imported.stdout


@pytest.mark.parametrize("name", GIT_REFUSES)
def test_a_domain_git_would_not_check_out_is_refused(
    cli, remote: Remote, repo: Path, tmp_path: Path, name: str
) -> None:
    assert cli(repo, "init").exit_code == 0
    before = remote.head()
    (repo / name).mkdir(parents=True)
    (repo / name / "notes.txt").write_text("mine\n")
    _refused_as_domain(cli, repo, tmp_path, name)
    (repo / name / ".tasks").mkdir()  # found as the nearest domain from inside it
    inside = cli(repo / name, "task", "add", "x", "--json")
    assert inside.exit_code == 2 and inside.json()["error"]["code"] == "bad_domain", inside.stdout
    assert remote.head() == before
    fresh = subprocess.run(
        ["git", "clone", "-q", str(remote.bare), str(tmp_path / "fresh")], capture_output=True
    )
    assert fresh.returncode == 0, fresh.stderr


# michi's own names, in any case a case-insensitive file system (macOS, Windows) takes for them: a domain
# `x/.TASKS` is `x/.tasks` there (a task folder inside a task folder), `.michi` holds michi's counters, and
# a task file under `.michi.lock/` would check out as the repo lock's folder in every clone.
MICHI_NAMES = [".michi", ".MICHI", ".michi/sub", ".michi.lock", ".Michi.Lock/sub", "x/.TASKS", "x/.Tasks/y"]


@pytest.mark.parametrize("name", MICHI_NAMES)
def test_a_domain_named_as_michis_own_folders_is_refused(
    cli, remote: Remote, repo: Path, tmp_path: Path, name: str
) -> None:
    assert cli(repo, "init").exit_code == 0
    before = remote.head()
    (repo / name).mkdir(parents=True, exist_ok=True)
    _refused_as_domain(cli, repo, tmp_path, name)
    assert remote.head() == before


@pytest.mark.parametrize("name", ["notes ", " lead", "t\tab", "a\nb", "x missing", "y ambiguous"])
def test_a_domain_named_with_blanks_works_like_any_other(cli, remote: Remote, repo: Path, name: str) -> None:
    """git reads paths one per line and answers `<path> missing`: a folder name with a space, a tab or a
    newline is still a folder of the user's, and its tasks are read back as they were written."""
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "at the root").exit_code == 0
    (repo / name).mkdir()
    added = cli(repo, "task", "add", "in the odd folder", "--domain", name, "--json")
    assert added.exit_code == 0, added.stdout
    assert added.json()["domain"] == name and added.json()["id"] == 2
    uuid = added.json()["uuid"]
    assert git(remote.bare, "show", "main:.michi/last-id") == "2"
    done = cli(repo, "task", "done", "2", "--json")
    assert done.exit_code == 0 and done.json()["state"] == "done", done.stdout
    listed = cli(repo, "task", "list", "--all", "--state", "any", "--json")
    assert listed.exit_code == 0
    assert {(t["id"], t["domain"], t["state"]) for t in listed.json()} == {
        (1, ".", "todo"),
        (2, name, "done"),
    }
    shown = cli(repo, "task", "show", uuid, "--json")
    assert shown.exit_code == 0 and shown.json()["version"] == 2


def test_an_absolute_domain_through_a_symlink_above_the_repository_is_its_real_folder(
    cli, remote: Remote, repo: Path, tmp_path: Path
) -> None:
    """A repository reached by a path with a symlink above it (macOS's /tmp, a linked home folder):
    `--domain "$PWD/libs"` named a folder inside it, yet was refused as outside the repository. The
    path is read as the folder it is; a symlink inside the repository, or out of it, is still refused."""
    assert cli(repo, "init").exit_code == 0
    (repo / "libs").mkdir()
    (repo / "libs" / "inner").symlink_to(repo / "libs", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    (repo / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    link = tmp_path / "via-link"
    link.symlink_to(repo, target_is_directory=True)
    added = cli(link, "--json", "task", "add", "x", "--domain", str(link / "libs"))
    assert added.exit_code == 0, added.stdout
    assert added.json()["domain"] == "libs"
    refusals = ((link / "libs" / "inner", "symlink"), (link / "out", "symlink"), (tmp_path, "outside"))
    for domain, why in refusals:
        refused = cli(link, "--json", "task", "add", "x", "--domain", str(domain))
        assert refused.exit_code == 2 and why in refused.json()["error"]["message"], (domain, refused.stdout)


@pytest.mark.parametrize("domain", ["vendor/tool", "vendor/tool/deep"])
def test_a_domain_inside_a_nested_repository_is_refused(cli, remote: Remote, repo: Path, domain: str) -> None:
    """A folder with its own `.git` (a nested clone, not a submodule) is another repository: a task file
    committed under it would make the outer repository track that folder, so `git status` there lists the
    nested repository's own files as untracked, and the nested one finds michi's files in its work tree."""
    assert cli(repo, "init").exit_code == 0
    nested = repo / "vendor" / "tool"
    git(repo, "init", "-q", str(nested))
    (nested / "deep").mkdir()
    (nested / "tool.c").write_text("int main;\n")
    before = remote.head()
    added = cli(repo, "task", "add", "x", "--domain", domain, "--json")
    assert added.exit_code == 2 and added.json()["error"]["code"] == "bad_domain", added.stdout
    assert "repository" in added.json()["error"]["message"]
    assert remote.head() == before
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == "?? vendor/tool/"
    assert git(nested, "status", "--porcelain", "--untracked-files=all").splitlines() == ["?? tool.c"]


def _push_a_file_at_api_tasks(remote: Remote) -> None:
    """Another clone pushes a plain file where a domain's `api/.tasks` folder would be."""
    other = remote.clone("other")
    (other / "api").mkdir()
    (other / "api" / ".tasks").write_text("someone else's file\n")
    git(other, "add", "api")
    git(other, "commit", "-qm", "api notes")
    git(other, "push", "-q", "origin", "main")


def test_the_task_branch_disagreeing_with_the_work_tree_is_still_refused(
    cli, with_user_files: Path, remote: Remote
) -> None:
    """The work tree has a folder `api/.tasks`; the task branch (another clone pushed) has a file there."""
    repo = with_user_files
    _push_a_file_at_api_tasks(remote)
    (repo / "api" / ".tasks").mkdir(parents=True)
    before = remote.head()
    result = cli(repo, "task", "add", "x", "--domain", "api", "--json")
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert error["code"] == "bad_domain" and error["path"] == "api/.tasks"
    assert remote.head() == before


def test_a_pending_offline_add_blocked_by_a_users_file_is_dropped_with_a_note(
    cli, with_user_files: Path, remote: Remote
) -> None:
    repo = with_user_files
    (repo / "api" / ".tasks").mkdir(parents=True)
    assert cli(repo, "task", "add", "offline", "--domain", "api", "--offline").exit_code == 0
    _push_a_file_at_api_tasks(remote)
    before = remote.head()
    synced = cli(repo, "sync", "--json")
    assert synced.exit_code == 4, synced.stdout  # sync says a pending operation was refused
    (refused,) = synced.json()["refused"]
    assert refused["code"] == "bad_domain" and "api/.tasks" in refused["reason"]
    assert remote.head() == before
    assert git(remote.bare, "show", "main:api/.tasks") == "someone else's file"
    assert cli(repo, "task", "add", "later", "--json").exit_code == 0  # nothing is stuck
    assert git(repo, "show", "main:api/.tasks") == "someone else's file"  # the local branch too


def _tree(repo: Path, files: dict[str, str], links: dict[str, str]) -> str:
    """A tree object with these files and symlinks (built by git itself, not by the code under test)."""
    index = repo / ".git" / "test-index"
    env = {"GIT_INDEX_FILE": str(index)}
    for path, text in files.items():
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{_blob(repo, text)},{path}", env=env)
    for path, target in links.items():
        git(repo, "update-index", "--add", "--cacheinfo", f"120000,{_blob(repo, target)},{path}", env=env)
    tree = git(repo, "write-tree", env=env)
    index.unlink()
    return tree


def _blob(repo: Path, text: str) -> str:
    return subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(
    "change",
    [
        {"docs/.tasks/a.json": "blob"},  # write through a file
        {"svc/.tasks/a.json": "blob"},  # write through a symlink
        {"docs/.tasks": "blob"},  # a plain file may be rewritten (a task file is one)
        {"svc/.tasks": None},  # delete a symlink
        {"lib": None},  # delete a folder
        {"lib": "blob"},  # replace a folder by a file
        {"lib": "blob", "lib/x.json": "blob"},  # a file and a folder at once
    ],
)
def test_strict_tree_edits_never_replace_what_is_not_a_plain_file(
    repo: Path, change: dict[str, str | None]
) -> None:
    tree = _tree(repo, {"docs/.tasks": "notes\n", "lib/code.py": "x\n"}, {"svc/.tasks": "../outside"})
    handle = mgit.open_repo(repo)
    blob = mgit.write_blob(handle, b"{}\n")
    changes = {p: (None if v is None else (mgit.BLOB_MODE, blob)) for p, v in change.items()}
    if change == {"docs/.tasks": "blob"}:
        new = mgit.edit_tree(handle, tree, changes)  # a plain file may be rewritten (a task file is one)
        assert git(repo, "cat-file", "-p", f"{new}:docs/.tasks") == "{}"
        return
    with pytest.raises(NotMichisPath):
        mgit.edit_tree(handle, tree, changes)
    # Replaying a user's own commit may do all of it.
    mgit.edit_tree(handle, tree, changes, strict=False)


@pytest.mark.parametrize(
    "path",
    [".tasks/u.json", "libs/auth/.tasks/u.json", ".michi/last-id", ".michi.toml", ".tasks/.keep"],
)
def test_michis_own_paths_may_be_committed(path: str) -> None:
    assert safe_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        "docs/.tasks",
        ".michi",
        ".michi/sub/file",
        ".tasks/notes.txt",
        "docs/.keep",
        "a/.tasks/b/c.json",
        ".tasks/.tasks/u.json",
        ".git/.tasks/u.json",
        "x/.GIT/.tasks/u.json",
        "../.tasks/u.json",
        "/etc/.tasks/u.json",
        "a//.tasks/u.json",
        *(f"{name}/.tasks/u.json" for name in GIT_REFUSES),
    ],
)
def test_nothing_else_is_ever_committed(path: str) -> None:
    with pytest.raises(MichiError, match="not a file of michi's"):
        safe_path(path)


@pytest.mark.parametrize(
    ("where", "folder"), [(".", ".tasks"), (".", "."), ("api", "api"), ("api", "."), ("api", "api/.tasks")]
)
def test_a_fifo_named_gitattributes_along_a_task_path_is_refused_not_waited_on(
    cli, remote: Remote, repo: Path, where: str, folder: str
) -> None:
    """git reads `.gitattributes` in every folder along a path it packs or checks out (the push's
    `pack-objects` asks each blob's `delta` attribute), opening it as a file: a FIFO there makes it wait
    for a writer for ever. michi hung holding the repo lock (every other command then timed out on it),
    deaf to SIGTERM while its push ran. Refused before anything is built, naming the file."""
    (repo / where / ".tasks").mkdir(parents=True, exist_ok=True)
    assert cli(repo, "init").exit_code == 0
    fifo = repo / folder / ".gitattributes"
    os.mkfifo(fifo)
    before = remote.head()
    proc = spawn_michi(repo, "--json", "task", "add", "x", "--domain", where)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        _release_readers(fifo)  # the git processes waiting to open it go on, and end
        proc.kill()
        proc.communicate()
        pytest.fail("michi waited on the FIFO")
    assert proc.returncode == 2, out + err
    error = json.loads(out)["error"]
    assert error["code"] == "bad_domain"
    assert str(fifo.relative_to(repo)) in error["message"] and "rm " in error["hint"]
    assert remote.head() == before
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _release_readers(fifo: Path) -> None:
    for _ in range(100):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return
