"""Output that cannot be written (the reader went away: `| head`, EPIPE; a full disk: ENOSPC) once made a
change that had landed end in a traceback and exit 1, so an agent repeated it. The output is dropped with
a note on stderr, and the exit code is the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _closed_pipe() -> int:
    """The write end of a pipe nobody reads: a write gets EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("sink", ["full_disk", "reader_gone"])
@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "people"])
def test_a_change_whose_output_is_lost_still_exits_0_and_lands_once(
    ready: Path, remote, sink: str, json_mode: bool
) -> None:
    out = os.open("/dev/full", os.O_WRONLY) if sink == "full_disk" else _closed_pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", *(["--json"] if json_mode else []), "task", "add", "landed"],
            cwd=ready,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "the output could not be written" in proc.stderr
    files = git(remote.bare, "ls-tree", "-r", "--name-only", "main").split()
    assert len([f for f in files if f.endswith(".json")]) == 1


@pytest.mark.parametrize("stdout_errors", ["strict", "surrogateescape"])
def test_a_domain_whose_name_is_not_utf8_is_printed_as_valid_utf8(ready: Path, stdout_errors: str) -> None:
    """A folder name git gives as bytes that are not UTF-8 (Linux allows any): with a strict stdout (a
    UTF-8 locale, the served worker) `task add` there landed and then exited 1 "please report a bug" (an
    agent repeats it: a second task), and `list --json` failed for every clone; with surrogateescape
    (C.UTF-8) --json's output held a raw 0xff byte, no JSON an agent can decode. The name is printed with
    the byte escaped (`\\udcff` in JSON), the exit code is the command's, and the name round-trips."""
    name = b"bad\xffname"
    os.mkdir(os.path.join(os.fsencode(ready), name))
    env = {**os.environ, "PYTHONIOENCODING": f"utf-8:{stdout_errors}"}

    def run(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "michi", *args], cwd=ready, env=env, capture_output=True)

    added = run("--json", "task", "add", "there", "--domain", name)
    assert added.returncode == 0, added.stdout + added.stderr
    domain = json.loads(added.stdout.decode("utf-8"))["domain"]
    assert os.fsencode(domain) == name
    assert len(git(ready, "log", "--format=%s", "-n", "5").splitlines()) == 3  # seed, init, this add
    listed = run("--json", "task", "list", "--all")
    assert listed.returncode == 0 and json.loads(listed.stdout.decode("utf-8"))[0]["domain"] == domain
    for args in (("task", "show", "1"), ("task", "log", "1"), ("export", "--all"), ("task", "list", "--all")):
        shown = run(*args)
        assert shown.returncode == 0, (args, shown.stderr)
        shown.stdout.decode("utf-8")


@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "people"])
def test_a_stderr_that_cannot_be_written_changes_no_result(ready: Path, remote, json_mode: bool) -> None:
    """A read's note on stderr (how old the data is) that cannot be written (a full disk) was reported as
    `storage_failed` ("cannot write to the repository"), exit 5, its result lost: the note is dropped,
    the result is printed and the exit code is the command's."""
    mode = ["--json"] if json_mode else []
    assert subprocess.run([sys.executable, "-m", "michi", "task", "add", "kept"], cwd=ready).returncode == 0
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", *mode, "task", "list"],
            cwd=ready,
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            timeout=120,
        )
    finally:
        os.close(full)
    assert proc.returncode == 0, proc.stdout
    if json_mode:
        assert [t["description"] for t in json.loads(proc.stdout)] == ["kept"]
    else:
        assert "kept" in proc.stdout
    shown = subprocess.run(
        [sys.executable, "-m", "michi", *mode, "task", "list"], cwd=ready, capture_output=True, text=True
    )
    assert "michi: " in shown.stderr  # the note a full stderr dropped: there is one to drop
