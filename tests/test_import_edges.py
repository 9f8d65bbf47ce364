"""`michi import` at its edges: what a round trip through Taskwarrior only re-spells (UDA values), inputs
that are no file (a named pipe nobody writes to, a folder, a device, a socket), a record too large for a
task file, and a stop signal while the import waits for the lock (ADR 0006)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi, spawn_michi
from importkit import A, B, C, task
from lockkit import wait_until
from twkit import taskwarrior

from michi.tasks.model import MAX_TASK_BYTES
from michi.tasks.twstream import BLOCK, MAX_VALUE

UDAS: dict[str, object] = {
    "estimate": 1.5,
    "count": 3,
    "big": 12345678901234567890,
    "tiny": 1e-7,
    "flag": True,
    "off": False,
    "nothing": None,
    "meta": {"b": 1, "a": [1, 2.5, True, None, "s"], "quote": 'say "hi"/é', "empty": {}},
    "list": ["a", [], {"k": 0.5}],
    "text": "1.5",
}


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    return repo


def _json_of(cli, repo: Path, *args: str) -> dict:
    result = cli(repo, *args, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    out: dict = result.json()
    return out


def test_uda_values_taskwarrior_only_re_spelled_are_no_change(
    cli, ready: Path, remote: Remote, tmp_path: Path
) -> None:
    """Taskwarrior returns a UDA it does not know as text: 1.5 as "1.500000", true as "true", an object as
    one line with its keys sorted. michi -> Taskwarrior -> michi modified every such task (a new version
    and commit for nothing); now they are skipped, and a value really changed there still lands."""
    tw: Callable[..., str] = taskwarrior(tmp_path)
    source = tmp_path / "in.json"
    source.write_text(json.dumps([task(A, **UDAS), task(B, estimate=2.5, meta={"k": [True]})]))
    assert _json_of(cli, ready, "import", str(source))["added"] == [1, 2]
    (tmp_path / "michi.json").write_text(cli(ready, "export").stdout)
    tw("import", str(tmp_path / "michi.json"))
    back = tmp_path / "back.json"
    back.write_text(tw("export"))
    assert json.loads(back.read_text())[0]["estimate"] == "1.500000"  # the re-spelling under test
    before = remote.head()
    report = _json_of(cli, ready, "import", str(back))
    assert (report["modified"], sorted(report["skipped"])) == ([], [1, 2])
    assert remote.head() == before
    # A real change, made in Taskwarrior (a declared UDA) and in the file (an object's content), lands.
    tw("config", "uda.estimate.type", "numeric")
    tw(B, "modify", "estimate:4")
    records = json.loads(tw("export"))
    for record in records:
        if record["uuid"] == A:
            record["meta"] = record["meta"].replace('"b":1.000000', '"b":2.000000')
    back.write_text(json.dumps(records))
    report = _json_of(cli, ready, "import", str(back))
    assert sorted(report["modified"]) == [1, 2]
    one, two = (json.loads(next((ready / ".tasks").glob(f"*/{u}.json")).read_text()) for u in (A, B))
    assert (two["estimate"], two["meta"]) == (4, {"k": [True]})  # the unchanged object kept as it was
    spelled = '{"a":[1.000000,2.500000,true,null,"s"],"b":2.000000,"empty":{},"quote":"say "hi"/é"}'
    assert one["meta"] == spelled  # Taskwarrior's text, as it was changed there
    assert {k: one[k] for k in UDAS if k != "meta"} == {k: v for k, v in UDAS.items() if k != "meta"}


def _refused_at_once(repo: Path, remote: Remote, source: str, said: str) -> None:
    """`michi import SOURCE` ends at once with exit 2, one line saying what SOURCE is; nothing lands and
    no lock is left behind."""
    before = remote.head()
    result = run_michi(repo, "--json", "import", source, timeout=20)  # blocked until killed, before
    assert result.exit_code == 2, (result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["code"] == "usage" and said in error["message"] and "\n" not in error["message"], error
    assert "lock" not in result.stdout + result.stderr
    assert remote.head() == before and not (repo / ".michi.lock").exists()


def test_a_pipe_is_read_when_a_program_writes_it_and_refused_at_once_when_none_does(
    ready: Path, remote: Remote, tmp_path: Path
) -> None:
    """A named pipe nobody writes to blocked the import until it was killed. `michi import <(task
    export)` (the path of a pipe, /dev/fd/N, whose writer has written) still imports."""
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    _refused_at_once(ready, remote, str(fifo), "a pipe nothing was written to (no writer)")
    read, write = os.pipe()
    os.write(write, json.dumps([task(A), task(B)]).encode())
    os.close(write)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "michi", "--json", "import", f"/dev/fd/{read}"],
            cwd=ready,
            capture_output=True,
            text=True,
            pass_fds=(read,),
            timeout=60,
        )
    finally:
        os.close(read)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] == [1, 2]


@pytest.mark.parametrize("kind", ["a folder", "a device", "a socket"])
def test_what_is_no_file_is_refused_before_it_is_read(
    ready: Path, remote: Remote, tmp_path: Path, kind: str
) -> None:
    """A device such as /dev/zero is never opened (it never ends); a folder or socket is named as such."""
    with socket.socket(socket.AF_UNIX) as sock:
        path = {"a folder": str(tmp_path), "a device": "/dev/zero", "a socket": str(tmp_path / "s")}[kind]
        if kind == "a socket":
            sock.bind(path)
        _refused_at_once(ready, remote, path, f"it is {kind}, not a file")


def test_a_record_too_large_for_a_task_file_is_a_problem_named_by_its_uuid_and_description(
    cli, ready: Path
) -> None:
    large = task(B, description="big one " + "x" * MAX_TASK_BYTES)
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([task(A), large, task(C)]))
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 4, result.stdout
    error = result.json()["error"]
    assert error["code"] == "import_problems" and error["added"] == [1, 2], error  # the rest landed
    [problem] = error["problems"]
    assert problem["uuid"] == B and "'big one xxx" in problem["problem"]
    assert f"over the limit of {MAX_TASK_BYTES:,}" in problem["problem"]
    assert error["message"].count(B) == 1 and "'big one xxx" in error["message"]  # said once, one line


def test_a_record_longer_than_any_export_of_a_task_names_the_record(cli, ready: Path, remote: Remote) -> None:
    """Such a record is never read whole (bounded memory, ADR 0015): it refuses the file, as a record no
    task file may hold does, named by its number, where it starts and its first characters."""
    source = ready.parent / "tw.json"
    source.write_text(json.dumps([task(A), task(B, description="huge " + "y" * (MAX_VALUE + 2 * BLOCK))]))
    before = remote.head()
    result = cli(ready, "import", str(source), "--json")
    assert result.exit_code == 2, result.stdout
    message = result.json()["error"]["message"]
    assert message.startswith("record 2 of the import file (character ") and B in message, message
    assert f"more than {MAX_VALUE:,} characters" in message and "\n" not in message
    assert remote.head() == before


def test_a_stop_signal_while_waiting_for_the_lock_claims_no_release(ready: Path, tmp_path: Path) -> None:
    """An import waiting for the lock another process holds, ended by SIGTERM, said "the repo lock was
    released": it never held it, and the holder still does."""
    source = tmp_path / "tw.json"
    source.write_text(json.dumps([task(A)]))
    git_dir = ready / ".git" / "michi"
    held = tmp_path / "held"
    holder = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", f': > "{held}"; exec sleep 60'],
        cwd=ready,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(held.exists, what="the lock held")
        proc = spawn_michi(ready, "--json", "import", str(source), "--wait", "60")
        try:
            wait_until(lambda: any((git_dir / "lock-queue").glob("*.ticket")), what="the import queued")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 130, (out, err)
        error = json.loads(out)["error"]
        assert error["code"] == "terminated" and "released" not in error["message"], error
        status = run_michi(ready, "--json", "lock", "status")
        assert json.loads(status.stdout)["held"] is True, status.stdout
        assert holder.poll() is None
    finally:
        holder.terminate()
        holder.wait(timeout=60)
    assert git(ready, "status", "--porcelain") == ""
