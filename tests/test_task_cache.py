"""The read path's list cache (ADR 0008): fast when nothing moved, never stale when something did."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git

from michi import git as mgit
from michi.commands.task_common import LIST_CACHE

AGE = re.compile(r"[0-9.]+ ?(s|min|h) ago")
SPAN = re.compile(r"\b[0-9]+ ?(s|min|h)\b")  # ages in the people's views tick between two runs
# Run michi in a fresh interpreter and report which heavy modules the command imported.
PROBE = """
import sys
from michi.cli.main import main
code = main(sys.argv[1:])
seen = {"code": code, "git": "git" in sys.modules, "rich": "rich" in sys.modules}
print(json.dumps(seen), file=sys.stderr)
"""


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def names(cli, where: Path, *args: str) -> list[str]:
    result = cli(where, "task", "list", "--json", *args)
    assert result.exit_code == 0, result.stdout
    return [t["description"] for t in result.json()]


def cache_file(repo: Path) -> Path:
    return repo / ".git" / "michi" / LIST_CACHE


def probe(repo: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", "import json\n" + PROBE, *args], cwd=repo, capture_output=True, text=True
    )
    return dict(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_warm_list_needs_no_git_and_no_rich(cli, ready: Path) -> None:
    cli(ready, "task", "add", "one")
    assert names(cli, ready) == ["one"] and cache_file(ready).exists()
    assert probe(ready, "--json", "task", "list") == {"code": 0, "git": False, "rich": False}
    assert probe(ready, "--json", "task", "list", "--tag", "x", "--all") == {
        "code": 0,
        "git": False,
        "rich": False,
    }


def test_another_clones_commit_is_seen_after_fetch_and_sync(cli, ready: Path, remote) -> None:
    cli(ready, "task", "add", "mine")
    assert names(cli, ready) == ["mine"]
    other = remote.clone("other")
    cli(other, "task", "add", "theirs")
    assert names(cli, ready) == ["mine"]  # as last synced: no network without --fetch
    assert names(cli, ready, "--fetch") == ["mine", "theirs"]
    cli(other, "task", "add", "third")
    assert cli(ready, "sync", "--json").exit_code == 0
    assert names(cli, ready) == ["mine", "theirs", "third"]


def test_this_clones_transactions_are_seen(cli, ready: Path) -> None:
    first = cli(ready, "task", "add", "a", "--json").json()
    assert names(cli, ready) == ["a"]
    cli(ready, "task", "add", "b", "--depends", str(first["id"]))
    assert names(cli, ready) == ["a", "b"]
    cli(ready, "task", "done", str(first["id"]))
    listed = cli(ready, "task", "list", "--json", "--state", "any").json()
    assert [(t["description"], t["state"]) for t in listed] == [("a", "done"), ("b", "todo")]
    assert listed[1]["depends"] == [first["id"]]
    cli(ready, "task", "add", "offline", "--offline")  # pending work: the local branch is the truth
    assert names(cli, ready) == ["b", "offline"]


def test_hand_moved_refs_are_seen(cli, ready: Path) -> None:
    cli(ready, "task", "add", "a")
    before = git(ready, "rev-parse", "refs/remotes/origin/main")
    cli(ready, "task", "add", "b")
    after = git(ready, "rev-parse", "refs/remotes/origin/main")
    assert names(cli, ready) == ["a", "b"]
    git(ready, "update-ref", "refs/remotes/origin/main", before)
    assert names(cli, ready) == ["a"]
    git(ready, "pack-refs", "--all")  # now only in packed-refs
    assert not (ready / ".git/refs/remotes/origin/main").exists()
    assert names(cli, ready) == ["a"]
    packed = ready / ".git" / "packed-refs"
    packed.write_text(packed.read_text().replace(before, after))  # rewritten by hand
    assert names(cli, ready) == ["a", "b"]
    (ready / ".git/refs/remotes/origin/main").write_text(before + "\n")  # a loose ref wins over packed
    assert names(cli, ready) == ["a"]


def test_config_and_branch_changes_are_seen(cli, ready: Path, monkeypatch) -> None:
    cli(ready, "task", "add", "on main")
    assert names(cli, ready) == ["on main"]
    git(ready, "remote", "rename", "origin", "elsewhere")  # no remote 'origin': the local branch
    assert names(cli, ready) == ["on main"]
    git(ready, "update-ref", "refs/heads/main", "HEAD~1")
    assert names(cli, ready) == []
    git(ready, "remote", "rename", "elsewhere", "origin")
    assert names(cli, ready) == ["on main"]
    monkeypatch.setenv("MICHI_BRANCH", "nothing-here")
    assert names(cli, ready) == []


def test_corrupt_cache_is_rebuilt_never_believed(cli, ready: Path) -> None:
    cli(ready, "task", "add", "a")
    cli(ready, "task", "add", "b")
    assert names(cli, ready) == ["a", "b"]
    path = cache_file(ready)
    good = path.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0x20  # still unmarshals, but the checksum no longer matches
    for bad in (b"", b"garbage", good[: len(good) // 2], bytes(damaged)):
        path.write_bytes(bad)
        assert names(cli, ready) == ["a", "b"]
        assert path.read_bytes() != bad  # rewritten
    (ready / ".git" / "michi" / "task-index.v3").write_bytes(b"junk")
    path.unlink()
    assert names(cli, ready) == ["a", "b"]


def test_list_and_show_spellings_agree_with_the_records(cli, ready: Path) -> None:
    """Each way of spelling a read gives the tasks the filters select, in id order, as one JSON document."""
    cli(ready, "task", "add", "a", "-t", "x", "--project", "p.q")
    cli(ready, "task", "add", "b", "-p", "H")
    cli(ready, "task", "start", "2")
    spellings = {
        ("task", "list"): ["a", "b"],
        ("task", "list", "--all", "--state", "todo", "--state=in_progress"): ["a", "b"],
        ("task", "list", "-t", "x", "--project=p"): ["a"],
        ("task", "list", "-tx"): ["a"],
        ("task", "list", "--assignee", "nobody"): [],
        ("task", "list", "--state", "in_progress", "--domain", "."): ["b"],
    }
    for args, expected in spellings.items():
        result = cli(ready, "--json", *args)
        assert result.exit_code == 0 and sorted(t["description"] for t in result.json()) == expected, args
        people = cli(ready, *args)
        assert people.exit_code == 0 and all(name in people.stdout for name in expected), args
    assert cli(ready, "task", "show", "2", "--json").json()["state"] == "in_progress"
    missing = cli(ready, "task", "show", "999", "--json")
    assert missing.exit_code == 3 and missing.json()["error"]["code"] == "task_not_found"


@pytest.mark.parametrize(
    "args",
    [
        ["task", "list", "--bogus"],
        ["task", "list", "--domain"],
        ["task", "list", "extra"],
        ["task", "show"],
        ["task", "show", "1", "2"],
        ["task", "list", "--state"],
    ],
)
def test_bad_read_spellings_are_usage_errors(cli, ready: Path, args: list[str]) -> None:
    result = cli(ready, "--json", *args)
    assert result.exit_code == 2 and result.json()["error"]["code"] == "usage", result.stdout


def test_read_ref(tmp_path: Path) -> None:
    oid, other = "a" * 40, "b" * 40
    (tmp_path / "refs" / "heads").mkdir(parents=True)
    (tmp_path / "packed-refs").write_text(
        f"# pack-refs with: peeled fully-peeled sorted\n{oid} refs/heads/main\n{other} refs/tags/v1\n^{oid}\n"
    )
    assert mgit.read_ref(tmp_path, "refs/heads/main") == oid
    assert mgit.read_ref(tmp_path, "refs/tags/v1") == other
    assert mgit.read_ref(tmp_path, "refs/heads/none") is None
    (tmp_path / "refs" / "heads" / "main").write_text(other + "\n")
    assert mgit.read_ref(tmp_path, "refs/heads/main") == other
    (tmp_path / "HEAD").write_text("ref: refs/heads/main\n")
    assert mgit.read_ref(tmp_path, "HEAD") == other
    (tmp_path / "refs" / "heads" / "main").write_text("ref: refs/heads/main\n")
    with pytest.raises(ValueError):
        mgit.read_ref(tmp_path, "refs/heads/main")  # a loop
    (tmp_path / "refs" / "heads" / "main").write_text("not an oid\n")
    with pytest.raises(ValueError):
        mgit.read_ref(tmp_path, "refs/heads/main")


def test_config_fingerprint_gives_up_on_includes(ready: Path) -> None:
    dot_git = ready / ".git"
    assert mgit.config_fingerprint(dot_git, dot_git) is not None
    git(ready, "config", "include.path", "extra.cfg")
    assert mgit.config_fingerprint(dot_git, dot_git) is None


ROW_TEXT = ('"description":{s(rec["description"])}', '"description":{s(rec["description"]).upper()}')
PARSING = (
    "return normal.loads_record(data, path), None",
    "return {**normal.loads_record(data, path), 'description': 'PARSED ANEW'}, None",
)


@pytest.mark.parametrize(
    ("module", "change"),
    [("tasks/viewtext.py", ROW_TEXT), ("tasks/index.py", PARSING)],
    ids=["row_text", "parsing"],
)
def test_a_change_of_the_code_that_makes_rows_is_seen_with_the_same_version(
    cli, ready: Path, tmp_path: Path, module: str, change: tuple[str, str]
) -> None:
    """The caches were keyed on michi's version alone: a development change of a row's text, or of how a
    file becomes a record (the index cache's records), with the version unchanged kept serving what the
    old code made."""
    import os
    import shutil

    code = tmp_path / "code"
    shutil.copytree(Path(__file__).resolve().parent.parent / "michi", code / "michi")
    cli(ready, "task", "add", "a task", "-t", "x")
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}

    def described() -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", "task", "list", "--json"],
            cwd=ready,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return str(json.loads(proc.stdout)[0]["description"])

    assert described() == "a task"  # the caches are written by this code
    source = code / "michi" / module
    text = source.read_text()
    assert change[0] in text
    source.write_text(text.replace(*change))  # the version stays as it is
    if module.endswith("index.py"):  # the index cache alone: the list cache is gone
        (ready / ".git" / "michi" / LIST_CACHE).unlink()
    assert described() == ("A TASK" if module.endswith("viewtext.py") else "PARSED ANEW")


def test_config_fingerprint_sees_the_system_config_of_a_git_installed_under_a_prefix(
    ready: Path, tmp_path: Path, monkeypatch
) -> None:
    """A git built with a prefix other than /usr (Homebrew, /usr/local, /opt) reads its system config
    from `PREFIX/etc/gitconfig`, not /etc/gitconfig: an edit there must change the fingerprint, or the
    kept identity and remote URLs would outlive it."""
    import shutil

    prefix = tmp_path / "opt" / "git"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "etc").mkdir()
    real = shutil.which("git")
    assert real is not None
    (prefix / "bin" / "git").symlink_to(real)
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    monkeypatch.delenv("GIT_CONFIG_SYSTEM", raising=False)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    dot_git = ready / ".git"
    before = mgit.config_fingerprint(dot_git, dot_git)
    (prefix / "etc" / "gitconfig").write_text("[user]\n\tname = From The System\n")
    assert mgit.config_fingerprint(dot_git, dot_git) != before
