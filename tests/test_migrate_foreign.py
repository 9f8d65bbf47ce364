"""Another tool's `.tasks/` folder (README: the hook leaves other tools' `.tasks/` folders alone) may hold
`.json` files no uuid names. `michi migrate` moved any whose name began with two hex digits
(`cafe-config.json` into `ca/`), and `michi init` took them for tasks and left a new repository flat.
ADR 0006: a file no uuid can name stays where it is."""

from __future__ import annotations

from pathlib import Path

from conftest import Remote, git


def tracked(where: Path) -> list[str]:
    return sorted(git(where, "ls-tree", "-r", "--name-only", "main").splitlines())


def foreign(repo: Path) -> None:
    (repo / "tools" / ".tasks").mkdir(parents=True)
    (repo / "tools" / ".tasks" / "cafe-config.json").write_text('{"lint": true}\n')
    (repo / "tools" / ".tasks" / "build.json").write_text('{"x": 1}\n')
    git(repo, "add", "tools")
    git(repo, "commit", "-qm", "another tool's .tasks folder")
    git(repo, "push", "-q", "origin", "main")


def test_migrate_moves_only_files_named_by_a_uuid(cli, remote: Remote, repo: Path) -> None:
    foreign(repo)
    uuid = cli(repo, "--json", "task", "add", "flat one").json()["uuid"]  # no init: a flat repository
    assert cli(repo, "migrate").exit_code == 0
    files = tracked(remote.bare)
    assert "tools/.tasks/cafe-config.json" in files and "tools/.tasks/build.json" in files
    assert not [p for p in files if p.startswith("tools/.tasks/ca/")]
    assert f".tasks/{uuid[:2]}/{uuid}.json" in files
    assert (repo / "tools" / ".tasks" / "cafe-config.json").read_text() == '{"lint": true}\n'


def test_init_does_not_count_them_as_tasks(cli, remote: Remote, repo: Path) -> None:
    foreign(repo)
    assert cli(repo, "init").exit_code == 0
    assert git(remote.bare, "show", "main:.michi/layout") == "fanout"
    before = tracked(remote.bare)
    assert cli(repo, "migrate").exit_code == 0
    assert tracked(remote.bare) == before
