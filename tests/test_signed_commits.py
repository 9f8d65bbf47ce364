"""A signed unpushed commit is never rewritten: michi leaves the branch where it is, with a note."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Remote, git


@pytest.fixture
def signing(repo: Path, tmp_path: Path) -> Path:
    """`repo` set up to sign commits with a fresh SSH key (git's `gpg.format ssh`)."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is needed to make a signing key")
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed"
    allowed.write_text(f"author@example.invalid {(tmp_path / 'key.pub').read_text()}")
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key))
    git(repo, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    return repo


def test_signed_local_commit_is_left_signed(cli, remote: Remote, signing: Path) -> None:
    repo = signing
    assert cli(repo, "init").exit_code == 0
    (repo / "README.md").write_text("signed work\n")
    git(repo, "commit", "-qS", "-am", "my signed unpushed commit")
    mine = git(repo, "rev-parse", "main")
    assert git(repo, "log", "-1", "--format=%G?", "main") == "G"
    (repo / "notes.txt").write_text("unstaged and untracked\n")

    added = cli(repo, "task", "add", "anything", "--json")
    assert added.exit_code == 0, added.stdout
    assert added.json()["transaction"]["pushed"]
    notes = added.json()["transaction"]["notes"]
    assert any("signed commits" in n and "left as it was" in n for n in notes), notes
    assert git(repo, "rev-parse", "main") == mine  # not replayed, so still signed
    assert git(repo, "log", "-1", "--format=%G?", "main") == "G"
    assert git(remote.bare, "log", "-1", "--format=%s", "main") == "michi: task add 1"
    assert git(remote.bare, "show", "main:README.md") == "hello"  # the unpushed commit stayed local
    assert (repo / "notes.txt").read_text() == "unstaged and untracked\n"


def test_unsigned_local_commit_is_still_replayed(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    (repo / "README.md").write_text("plain work\n")
    git(repo, "commit", "-qam", "my unsigned unpushed commit")
    assert cli(repo, "task", "add", "anything").exit_code == 0
    assert git(repo, "log", "-2", "--format=%s", "main").splitlines() == [
        "my unsigned unpushed commit",
        "michi: task add 1",
    ]
