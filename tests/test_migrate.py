"""The fan-out layout and `michi migrate` (ADR 0006): both layouts are read everywhere, a repository that
began flat keeps working when partly or wholly migrated, and the migration is one commit of renames that
leaves the user's work and other clones alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Remote, git
from twkit import taskwarrior


def files(where: Path, ref: str = "main") -> list[str]:
    out = git(where, "ls-tree", "-r", "--name-only", ref)
    return [p for p in out.splitlines() if p.endswith(".json")]


def is_fan(path: str) -> bool:
    parts = path.split("/")
    return len(parts) >= 3 and parts[-3] == ".tasks" and parts[-1].startswith(parts[-2])


def flat_repo(cli, repo: Path) -> Path:
    """A repository as michi made them before the fan-out layout: no `init`, so no `.michi/layout`."""
    (repo / "libs" / "auth").mkdir(parents=True)
    (repo / "libs" / "auth" / "code.py").write_text("print()\n")
    git(repo, "add", "libs")
    git(repo, "commit", "-qm", "user code")
    git(repo, "push", "-q", "origin", "main")
    for args in (("one",), ("two",), ("three", "--domain", "libs/auth")):
        assert cli(repo, "task", "add", *args).exit_code == 0
    return repo


def test_init_makes_new_repositories_fan_out(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    assert git(remote.bare, "show", "main:.michi/layout") == "fanout"
    uuid = cli(repo, "task", "add", "x", "--json").json()["uuid"]
    assert files(remote.bare) == [f".tasks/{uuid[:2]}/{uuid}.json"]
    assert (repo / ".tasks" / uuid[:2] / f"{uuid}.json").is_file()


def test_a_repository_with_tasks_stays_flat_until_migrate(cli, remote: Remote, repo: Path) -> None:
    flat_repo(cli, repo)
    assert cli(repo, "init").exit_code == 0  # initialising later does not change the layout
    assert cli(repo, "task", "add", "four").exit_code == 0
    assert git(remote.bare, "cat-file", "-t", "main:.michi/layout", check=False) == ""
    assert len(files(remote.bare)) == 4 and not any(is_fan(p) for p in files(remote.bare))


def test_a_mixed_repository_reads_and_changes_both_layouts(cli, remote: Remote, repo: Path) -> None:
    flat_repo(cli, repo)
    (repo / ".michi" / "layout").write_text("fanout\n")  # as a migrate by another clone would leave it
    git(repo, "add", ".michi/layout")
    git(repo, "commit", "-qm", "fan-out from now on")
    git(repo, "push", "-q", "origin", "main")
    assert cli(repo, "task", "add", "four", "-p", "H").exit_code == 0
    assert cli(repo, "task", "add", "five", "--domain", "libs/auth").exit_code == 0
    paths = files(remote.bare)
    assert sum(map(is_fan, paths)) == 2 and len(paths) == 5
    listed = cli(repo, "task", "list", "--all", "--json").json()
    assert sorted(t["id"] for t in listed) == [1, 2, 3, 4, 5]
    assert {t["domain"] for t in listed if t["id"] in (3, 5)} == {"libs/auth"}
    for ref in ("1", "3", "4", "5"):
        shown = cli(repo, "task", "show", ref, "--json")
        assert shown.exit_code == 0 and shown.json()["id"] == int(ref)
    assert cli(repo, "task", "done", "1").exit_code == 0
    assert cli(repo, "task", "done", "5").exit_code == 0
    claimed = cli(repo, "--agent", "bot", "task", "next", "--claim", "--all", "--json")
    assert claimed.exit_code == 0 and claimed.json()["id"] == 4  # priority H first
    claimed = cli(repo, "--agent", "bot", "task", "next", "--claim", "--all", "--json")
    assert claimed.exit_code == 0 and claimed.json()["id"] in (2, 3)
    assert sorted(files(remote.bare)) == sorted(paths)  # a changed task keeps its path, either layout
    listed = cli(repo, "task", "list", "--all", "--state", "any", "--json").json()
    states = {t["id"]: t["state"] for t in listed}
    assert states[1] == states[5] == "done" and states[4] == "in_progress"


def test_migrate_is_one_commit_of_renames_and_keeps_the_users_work(cli, remote: Remote, repo: Path) -> None:
    flat_repo(cli, repo)
    assert cli(repo, "task", "done", "2").exit_code == 0
    before = cli(repo, "export", "--all").stdout
    logged = cli(repo, "task", "log", "1", "--json").json()
    git(repo, "pull", "-q", "--ff-only")
    # The user's work: an unpushed commit, a staged file, an unstaged change, an untracked file.
    (repo / "notes.txt").write_text("unpushed\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "user: notes")
    (repo / "staged.txt").write_text("staged \xe9\n")
    git(repo, "add", "staged.txt")
    (repo / "libs" / "auth" / "code.py").write_text("print('unstaged')\n")
    (repo / "untracked.bin").write_bytes(b"\x00\xff raw")
    status, diff, cached = (
        git(repo, "status", "--porcelain"),
        git(repo, "diff"),
        git(repo, "diff", "--cached"),
    )
    old_head = remote.head()

    done = cli(repo, "migrate", "--json")
    assert done.exit_code == 0, done.stdout
    assert done.json()["moved"] == 3 and done.json()["transaction"]["pushed"]
    new_head = remote.head()
    assert git(remote.bare, "rev-parse", f"{new_head}^") == old_head  # one commit
    renames = git(remote.bare, "diff-tree", "-r", "-M", "--name-status", old_head, new_head).splitlines()
    moved = [line.split("\t") for line in renames if line.startswith("R")]
    assert len(moved) == 3 and all(r[0] == "R100" and is_fan(r[2]) for r in moved)  # contents unchanged
    assert [line for line in renames if not line.startswith("R")] == ["A\t.michi/layout"]
    assert all(is_fan(p) for p in files(remote.bare))

    assert cli(repo, "export", "--all").stdout == before  # ids, contents and the export unchanged
    assert git(repo, "status", "--porcelain") == status
    assert (git(repo, "diff"), git(repo, "diff", "--cached")) == (diff, cached)
    assert (repo / "untracked.bin").read_bytes() == b"\x00\xff raw"
    assert git(repo, "log", "-1", "--format=%s", "main") == "user: notes"  # still unpushed, on top
    assert not list((repo / ".tasks").glob("*.json")) and len(list((repo / ".tasks").glob("*/*.json"))) == 2

    log = cli(repo, "task", "log", "1", "--json").json()  # followed across the move
    assert [e["command"] for e in log["entries"]][: len(logged["entries"])] == [
        e["command"] for e in logged["entries"]
    ]
    assert log["entries"][-1]["command"].startswith("migrate") and log["entries"][-1]["changes"] == {}

    again = cli(repo, "migrate", "--json")
    assert (
        again.exit_code == 0 and again.json()["moved"] == 0 and again.json()["transaction"]["commit"] is None
    )
    assert remote.head() == new_head
    assert "nothing to migrate" in cli(repo, "migrate").stdout


def test_a_flat_clone_syncs_after_another_migrates(cli, remote: Remote, repo: Path) -> None:
    flat_repo(cli, repo)
    other = remote.clone("other")
    assert cli(other, "task", "done", "1", "--offline").exit_code == 0
    assert cli(other, "task", "add", "offline", "--offline").exit_code == 0
    assert cli(repo, "migrate").exit_code == 0
    synced = cli(other, "sync", "--json")
    assert synced.exit_code == 0, synced.stdout
    paths = files(remote.bare)
    assert len(paths) == 4 and all(map(is_fan, paths))
    tasks = {t["id"]: t for t in cli(other, "task", "list", "--all", "--state", "any", "--json").json()}
    assert tasks[1]["state"] == "done" and tasks[4]["description"] == "offline"
    assert not list((other / ".tasks").glob("*.json"))  # its checkout moved with the branch
    assert cli(other, "task", "done", "2").exit_code == 0
    again = cli(repo, "task", "show", "2", "--json", "--fetch").json()
    assert again["state"] == "done"


def test_a_task_in_both_layouts_stops_the_migration(cli, remote: Remote, repo: Path) -> None:
    flat_repo(cli, repo)
    git(repo, "pull", "-q", "--ff-only")
    flat = next(p for p in files(repo) if p.startswith(".tasks/"))
    name = flat.rsplit("/", 1)[-1]
    (repo / ".tasks" / name[:2]).mkdir()
    (repo / ".tasks" / name[:2] / name).write_bytes((repo / flat).read_bytes())
    git(repo, "add", ".tasks")
    git(repo, "commit", "-qm", "a copy by hand")
    git(repo, "push", "-q", "origin", "main")
    before = remote.head()
    result = cli(repo, "migrate", "--json")
    assert result.exit_code == 4 and result.json()["error"]["code"] == "migrate_clash"
    assert remote.head() == before


def test_taskwarrior_round_trip_across_the_migration(cli, remote: Remote, repo: Path, tmp_path: Path) -> None:
    tw = taskwarrior(tmp_path)
    flat_repo(cli, repo)
    exported = tmp_path / "michi.json"
    exported.write_text(cli(repo, "export", "--all").stdout)
    tw("import", str(exported))
    assert cli(repo, "migrate").exit_code == 0
    back = tmp_path / "tw.json"
    back.write_text(tw("export"))
    head = remote.head()
    report = cli(repo, "import", str(back), "--json").json()
    assert len(report["skipped"]) == 3 and not report["added"] and not report["modified"]
    assert remote.head() == head
    records = json.loads(cli(repo, "export", "--all").stdout)
    assert {r["michi_domain"] for r in records} == {".", "libs/auth"}


@pytest.mark.parametrize("layout", ["flat", "fanout"])
def test_doctor_and_the_cache_read_both_layouts(cli, repo: Path, layout: str) -> None:
    if layout == "fanout":
        assert cli(repo, "init").exit_code == 0
    flat_repo(cli, repo)
    assert cli(repo, "doctor", "--json").json()["tasks"] == 3
    warm = cli(repo, "task", "list", "--all", "--json").json()
    for cache in (repo / ".git" / "michi").glob("task-*"):
        cache.unlink()
    assert cli(repo, "task", "list", "--all", "--json").json() == warm


def test_a_file_no_uuid_could_name_stays_where_it_is(cli, remote: Remote, repo: Path) -> None:
    """`.tasks/notes.json` is read as a (corrupt) task file; it has no fan-out folder to go to."""
    flat_repo(cli, repo)
    git(repo, "pull", "-q", "--ff-only")
    (repo / ".tasks" / "notes.json").write_text("{}\n")
    git(repo, "add", ".tasks")
    git(repo, "commit", "-qm", "a stray file by hand")
    git(repo, "push", "-q", "origin", "main")
    result = cli(repo, "migrate", "--json")
    assert result.exit_code == 0 and result.json()["moved"] == 3, result.stdout
    assert ".tasks/notes.json" in files(remote.bare)
    assert sum(map(is_fan, files(remote.bare))) == 3
    problems = cli(repo, "doctor", "--json").json()["problems"]
    assert any(".tasks/notes.json" in json.dumps(p) for p in problems)
