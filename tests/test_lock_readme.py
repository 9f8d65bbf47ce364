"""Every shell snippet in the README's lock and hook sections runs as written, with the hook installed,
in a clone with a remote: what the README teaches must work the first time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import Remote, git
from lockkit import bash, michi_on_path

README = Path(__file__).resolve().parents[1] / "README.md"
REGENERATE = "#!/bin/sh\ndate +%s%N >> generated.txt\n"  # what `./regenerate.sh` stands for


def snippets(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    body = text.split(f"<!-- section:{section}:start -->")[1].split(f"<!-- section:{section}:end -->")[0]
    return re.findall(r"```sh\n(.*?)```", body, flags=re.S)


CASES = [(section, i) for section in ("lock", "hook") for i in range(len(snippets(section)))]


def test_the_sections_have_snippets() -> None:
    assert len(snippets("lock")) >= 2 and len(snippets("hook")) >= 1


@pytest.mark.parametrize(("section", "index"), CASES)
def test_snippet_runs_as_written(remote: Remote, tmp_path: Path, section: str, index: int) -> None:
    clone = remote.clone("dev")
    env = michi_on_path(tmp_path)
    (clone / "regenerate.sh").write_text(REGENERATE)
    (clone / "regenerate.sh").chmod(0o755)
    (clone / "generated.txt").write_text("")
    git(clone, "add", "regenerate.sh", "generated.txt")
    git(clone, "commit", "-qm", "a generated file")
    git(clone, "push", "-q", "origin", "main")
    setup = bash(clone, "michi init --hook", env)
    assert setup.returncode == 0, setup.stderr
    # Someone else pushed meanwhile: the snippets must rebase on it, never overwrite it.
    other = remote.clone("other")
    (other / "other.txt").write_text("theirs\n")
    git(other, "add", "other.txt")
    git(other, "commit", "-qm", "theirs")
    git(other, "pull", "-q", "--rebase")
    git(other, "push", "-q", "origin", "main")
    before = remote.head()

    result = bash(clone, snippets(section)[index], env)

    assert result.returncode == 0, result.stderr
    assert "refused" not in result.stderr
    assert not (clone / ".michi.lock").exists()
    if "git push" in snippets(section)[index]:
        assert remote.head() != before
        assert git(remote.bare, "log", "-1", "--format=%s", "main") == "regenerate"
        assert "theirs" in git(remote.bare, "log", "--format=%s", "main")
        assert git(clone, "status", "--porcelain") == ""
