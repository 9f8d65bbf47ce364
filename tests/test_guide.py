"""`michi guide` (the agent's manual), `michi --json guide` (the contract, generated from the code) and
`michi init --agents` (michi's marked section in AGENTS.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import Remote, git

import michi
from michi.errors import ExitCode
from michi.tasks.query import VIEW_KEYS

SOURCE = Path(michi.__file__).parent


def _codes_in_source() -> set[str]:
    """Every error code michi's source names, found independently of the guide's own search."""
    found: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'\bcode="([a-z_]+)"', text))
        found |= set(re.findall(r'^\s+code = "([a-z_]+)"', text, re.MULTILINE))
    return found


def test_manual_teaches_the_loop_in_80_lines(cli, tmp_path: Path) -> None:
    out = cli(tmp_path, "guide")  # works outside any repository
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) <= 80 and max(len(line) for line in lines) <= 110
    loop = ("task next --claim", "task done ID", "open == 0", "renew", "lock run", "git pull --rebase")
    for needed in loop:
        assert needed in out.stdout, needed
    for code in ("no_ready_task", "claimed", "lock_busy", "push_unknown"):
        assert code in out.stdout


def test_json_contract_covers_every_code_command_and_field(cli, tmp_path: Path) -> None:
    data = cli(tmp_path, "--json", "guide").json()
    assert set(data["exit_codes"]) == {str(int(c)) for c in ExitCode}
    missing = _codes_in_source() - set(data["error_codes"])
    assert not missing, f"error codes raised in michi/ but absent from the guide: {missing}"
    assert data["error_codes"]["no_ready_task"]["exit_code"] == 3
    assert data["error_codes"]["push_unknown"]["exit_code"] == 5
    assert data["error_codes"]["command_failed"] == {"exit_code": 127, "also": [126]}  # as a shell's
    assert data["error_codes"]["lock_lost"] == {"exit_code": 75, "also": [4]}  # 4: lock release/renew
    assert tuple(data["task"]["fields"]) == VIEW_KEYS and "urgency" in data["task"]["extra_fields"]
    commands = {c["command"]: c for c in data["commands"]}
    assert {"michi task next", "michi task log", "michi guide", "michi lock run"} <= set(commands)
    opts = {p["flags"][0]: p for p in commands["michi task add"]["params"] if p["kind"] == "option"}
    assert opts["--tag"]["repeatable"] and opts["--tag"]["metavar"] == "TAG"
    assert not opts["--offline"]["takes_value"] and not opts["--offline"]["repeatable"]
    assert "--fetch" not in {p["flags"][0] for p in commands["michi task next"]["params"] if "flags" in p}
    assert {p["flags"][0] for p in data["global_options"]} == {"-C", "--json", "--agent"}


def test_init_agents_writes_a_marked_section_and_nothing_else(cli, repo: Path) -> None:
    result = cli(repo, "init", "--agents", "--json")
    assert result.exit_code == 0 and result.json()["agents_md"]["section"] == "created"
    text = (repo / "AGENTS.md").read_text()
    assert "michi guide" in text and text.count("<!-- michi:start -->") == 1
    mine = "# Our agents\n\nBe kind.\n"
    (repo / "AGENTS.md").write_text(mine + "\n" + text.replace("michi guide", "an old text") + "\nTail.\n")
    again = cli(repo, "init", "--agents", "--json").json()["agents_md"]
    assert again["section"] == "replaced"
    rewritten = (repo / "AGENTS.md").read_text()
    assert rewritten == mine + "\n" + text + "\nTail.\n"
    assert cli(repo, "init", "--agents", "--json").json()["agents_md"]["section"] == "unchanged"
    (repo / "AGENTS.md").write_text("only\n")
    assert cli(repo, "init", "--agents", "--json").json()["agents_md"]["section"] == "added"
    assert (repo / "AGENTS.md").read_text() == "only\n\n" + text


@pytest.mark.parametrize(
    "broken", ["<!-- michi:start -->\nno end\n", "<!-- michi:end -->\n<!-- michi:start -->\n"]
)
def test_init_agents_refuses_a_broken_section(cli, repo: Path, broken: str) -> None:
    (repo / "AGENTS.md").write_text(broken)
    result = cli(repo, "init", "--agents", "--json")
    assert result.exit_code == 2 and "AGENTS.md" in result.json()["error"]["message"]
    assert (repo / "AGENTS.md").read_text() == broken


def test_init_agents_keeps_every_byte_outside_the_section(cli, repo: Path) -> None:
    """A Windows-written AGENTS.md (CRLF line ends), with a byte that is not UTF-8 and a lone CR: only the
    section is michi's, so nothing else may be re-spelled (universal newlines turn every CRLF into LF)."""
    mine = b"# Our agents\r\n\r\nBe kind.\r\nLatin-1: caf\xe9\r\nold Mac line\rend\r\n"
    (repo / "AGENTS.md").write_bytes(mine)
    result = cli(repo, "init", "--agents", "--json")
    assert result.exit_code == 0 and result.json()["agents_md"]["section"] == "added", result.stdout
    written = (repo / "AGENTS.md").read_bytes()
    assert written.startswith(mine) and b"<!-- michi:start -->" in written[len(mine) :]
    tail = b"\r\nTail \xff.\r\n"
    (repo / "AGENTS.md").write_bytes(written + tail)
    again = cli(repo, "init", "--agents", "--json")
    assert again.json()["agents_md"]["section"] == "unchanged"
    assert (repo / "AGENTS.md").read_bytes() == written + tail


def test_init_agents_writes_through_a_symlink_inside_the_repository(cli, repo: Path, tmp_path: Path) -> None:
    """AGENTS.md is often a link to CLAUDE.md: the section goes into the file it names, and the link stays
    a link. A link out of the repository, or a folder, is refused: michi writes nothing outside it."""
    (repo / "CLAUDE.md").write_text("# Claude\n")
    (repo / "AGENTS.md").symlink_to("CLAUDE.md")
    result = cli(repo, "init", "--agents", "--json")
    assert result.exit_code == 0, result.stdout
    assert (repo / "AGENTS.md").is_symlink() and (repo / "AGENTS.md").readlink() == Path("CLAUDE.md")
    assert (repo / "CLAUDE.md").read_text().startswith("# Claude\n\n<!-- michi:start -->")
    outside = tmp_path / "outside.md"
    outside.write_text("not the repository's\n")
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").symlink_to(outside)
    refused = cli(repo, "init", "--agents", "--json")
    assert refused.exit_code == 2 and "AGENTS.md" in refused.json()["error"]["message"], refused.stdout
    assert outside.read_text() == "not the repository's\n" and (repo / "AGENTS.md").is_symlink()
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").mkdir()
    folder = cli(repo, "init", "--agents", "--json")
    assert folder.exit_code == 2 and "AGENTS.md" in folder.json()["error"]["message"], folder.stdout


@pytest.mark.parametrize(
    "link", [".git/config", ".git/hooks/pre-commit", ".michi/last-id", ".michi.toml", "sub/nested/NOTES.md"]
)
def test_init_agents_never_writes_through_a_link_to_gits_michis_or_another_repositorys_file(
    cli, repo: Path, remote: Remote, link: str
) -> None:
    """AGENTS.md as a link (pushed by another clone) to git's config, michi's own files or a file of a
    nested repository: refused before the init lands. It appended its section to `.git/config` (every git
    command then failed: "bad config line"), or rewrote the nested repository's file."""
    assert cli(repo, "init").exit_code == 0
    (repo / "sub" / "nested").mkdir(parents=True)
    git(repo / "sub" / "nested", "init", "-q")
    (repo / "sub" / "nested" / "NOTES.md").write_text("theirs\n")
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "AGENTS.md").symlink_to(link)
    before = {p: (repo / p).read_bytes() for p in (".git/config", link)}
    head = remote.head()
    refused = cli(repo, "init", "--agents", "--json")
    assert refused.exit_code == 2 and "AGENTS.md" in refused.json()["error"]["message"], refused.stdout
    assert {p: (repo / p).read_bytes() for p in before} == before
    assert remote.head() == head and git(repo, "status", "--porcelain", "--", ".git") == ""


def test_init_agents_refused_lands_nothing(cli, local_repo: Path) -> None:
    """A refused AGENTS.md (a folder) says exit 2 before the init is committed: exit 2 means nothing done."""
    (local_repo / "AGENTS.md").mkdir()
    refused = cli(local_repo, "init", "--agents", "--json")
    assert refused.exit_code == 2, refused.stdout
    assert not (local_repo / ".michi.toml").exists() and not (local_repo / ".michi").exists()
