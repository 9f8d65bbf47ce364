"""The pre-loaded server (ADR 0016): a command handed to a warm, forking michi answers exactly
as when run in its own process, with the caller's terminal, directory, environment, signals and exit
code; everything else, and every doubt, runs in the caller's own process."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, git, run_michi, spawn_michi
from tests.lockkit import await_exit, new_lock, wait_until
from tests.servekit import here, running_server
from tests.test_leftovers import HeldRm, assert_detached


def _served(repo: Path, *args: str, **env: str) -> CliResult:
    return run_michi(repo, *args, env={"MICHI_DEBUG": "1", **env})


_here = here


def _calm(text: str) -> str:
    """Stderr without the times in it ("as of the last sync 1s ago")."""
    return re.sub(r"\d+s ago", "Ns ago", text).strip()


def _status() -> dict:
    result = _here(Path.cwd(), "--json", "server", "status")
    assert result.exit_code == 0, result.stderr
    return result.json()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    yield from running_server(monkeypatch)


@pytest.fixture
def tracker(repo: Path) -> Path:
    assert _here(repo, "init").exit_code == 0
    for name in ("one", "two", "three"):
        assert _here(repo, "task", "add", name).exit_code == 0
    return repo


def test_served_commands_answer_as_run_here(server: dict, tracker: Path) -> None:
    added = _served(tracker, "--json", "task", "add", "served")
    assert added.exit_code == 0, added.stderr
    assert "served by the michi server" in added.stderr
    assert added.json()["description"] == "served"
    for args in (
        ("--json", "task", "show", "4"),
        ("task", "show", "4"),
        ("--json", "task", "list"),
        ("--json", "task", "show", "99"),  # not found: exit 3, the same error document
        ("task", "frobnicate"),  # usage: exit 2, the same message
        ("--help",),
        ("--json", "guide"),
    ):
        served, here = _served(tracker, *args), _here(tracker, *args)
        assert (served.exit_code, served.stdout) == (here.exit_code, here.stdout), args
        assert _calm(here.stderr) in _calm(served.stderr)
    assert _status()["served"] == 8


def test_the_worker_is_the_caller(server: dict, tracker: Path) -> None:
    """Directory, environment and options are the caller's: a relative -C from a subfolder, the agent
    from MICHI_AGENT, and the commit's trailers."""
    (tracker / "sub").mkdir()
    claimed = _served(tracker / "sub", "-C", "..", "--json", "task", "claim", "2", MICHI_AGENT="bot-7")
    assert claimed.exit_code == 0, claimed.stderr
    assert "served by" in claimed.stderr and claimed.json()["assignee"] == "bot-7"
    assert "Michi-Agent: bot-7" in git(tracker, "log", "-1", "--format=%B")


def test_a_served_command_leaves_its_staging_to_a_detached_rm(
    server: dict, tracker: Path, tmp_path: Path
) -> None:
    """The worker ends with its command, as a command run here does: the removal of its staging folder
    is handed to an `rm` that nobody waits for (`michi.leftovers`)."""
    held = HeldRm.make(tmp_path / "held")
    added = _served(tracker, "--json", "task", "add", "served", PATH=held.path, MICHI_STAGED_INDEX_BYTES="0")
    assert added.exit_code == 0, added.stderr
    assert "served by the michi server" in added.stderr
    assert_detached(held, tracker)


def test_other_commands_run_in_the_callers_process(server: dict, tracker: Path) -> None:
    for args in (("lock", "status"), ("--json", "server", "status"), ("--version",), ("hook", "--help")):
        result = _served(tracker, *args)
        assert "served by" not in result.stderr, args
    assert _status()["served"] == 0


def _waiting_client(repo: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """A served command waiting for the lock (held by this test); returns it and its worker's PID."""
    client = spawn_michi(repo, *args, env={"MICHI_DEBUG": "1"})
    assert client.stderr is not None
    ready, _, _ = select.select([client.stderr], [], [], 30)
    assert ready, "the client never said who serves it"
    line = client.stderr.readline()
    assert "worker PID" in line, line
    return client, int(line.rsplit("PID", 1)[1].strip(" )\n"))


def test_ctrl_c_reaches_the_worker(server: dict, tracker: Path) -> None:
    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client, worker = _waiting_client(tracker, "--json", "task", "add", "never", "--wait", "60")
        wait_until(lambda: worker in [w["pid"] for w in _status()["workers"]], what="the worker")
        client.send_signal(signal.SIGINT)
        out, _ = client.communicate(timeout=30)
        assert client.returncode == 130
        assert json.loads(out)["error"]["code"] == "interrupted"
        await_exit(worker)
    finally:
        lock.release()
    assert "never" not in _here(tracker, "--json", "task", "list").stdout


@pytest.mark.parametrize("ignored", ["SIGINT", "SIGHUP"])
def test_a_signal_its_caller_ignores_does_not_stop_it(server: dict, tracker: Path, ignored: str) -> None:
    """`nohup michi ...` ignores SIGHUP, a background job in a script SIGINT: the command must not stop on
    them served either (it ran with the worker's default handlers and exited 130)."""
    sig = getattr(signal, ignored)
    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client = _adding(tracker, "kept", lambda: signal.signal(sig, signal.SIG_IGN))
        wait_until(lambda: _lock_waiters(tracker) > 0, what="the command waiting for the lock")
        client.send_signal(sig)
    finally:
        lock.release()
    out, err = client.communicate(timeout=30)
    assert client.returncode == 0, err
    assert json.loads(out)["description"] == "kept"


def _adding(repo: Path, description: str, preexec: Callable[[], object]) -> subprocess.Popen[str]:
    """A served `task add` that waits for the lock (held by the test), its process set up by `preexec`."""
    return subprocess.Popen(
        [sys.executable, "-m", "michi", "--json", "task", "add", description, "--wait", "60"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MICHI_DEBUG": "1"},
        preexec_fn=preexec,
    )


def _lock_waiters(repo: Path) -> int:
    queue = repo / ".git" / "michi" / "lock-queue"
    return len(list(queue.iterdir())) if queue.is_dir() else 0


def test_a_taken_spare_is_replaced_once_its_command_ends(server: dict, tracker: Path) -> None:
    """While a command runs, one spare waits beside it; the fork of the second is not made beside the
    command but after it (ADR 0016)."""
    wait_until(lambda: len(_children(server["pid"])) == 2, what="two spares")
    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client, worker = _waiting_client(tracker, "--json", "task", "add", "later", "--wait", "60")
        wait_until(lambda: worker in [w["pid"] for w in _status()["workers"]], what="the worker")
        running = _children(server["pid"])
        assert worker in running and len(running) == 2, running  # the command's worker and one spare
    finally:
        lock.release()
    out, _ = client.communicate(timeout=60)
    assert client.returncode == 0, out
    wait_until(
        lambda: worker not in _children(server["pid"]) and len(_children(server["pid"])) == 2,
        what="two spares again",
    )


def _dirty_kb(pid: int) -> tuple[int, int]:
    """(shared, private) written pages of `pid`, in kB: shared ones are still the server's."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        fields = dict(line.split(":", 1) for line in rollup.read().splitlines()[1:])
    return int(fields["Shared_Dirty"].split()[0]), int(fields["Private_Dirty"].split()[0])


def test_a_spare_owns_its_copy_of_the_servers_pages(server: dict, tracker: Path) -> None:
    """Forked while no command runs, a spare copies the server's memory before it accepts: a command
    pays no copy-on-write faults (ADR 0016). Without it a fresh fork owns almost nothing."""
    served = _served(tracker, "--json", "task", "list")  # a spare taken, and replaced once it ended
    assert served.exit_code == 0
    worker = int(re.search(r"worker PID (\d+)", served.stderr).group(1))  # type: ignore[union-attr]

    def spares_own_their_pages() -> bool:
        spares = _children(server["pid"])
        try:
            dirty = [_dirty_kb(pid) for pid in spares]
        except OSError:  # one ended meanwhile
            return False
        # Copied, the heap (~20 MB) is the spare's own; shared, nearly all of it is the server's.
        owned = all(private > 4 * shared for shared, private in dirty)
        return len(spares) == 2 and worker not in spares and owned

    wait_until(spares_own_their_pages, what="two spares, each with its own copy of the server's pages")


def test_a_killed_client_takes_its_worker_along(server: dict, tracker: Path) -> None:
    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client, worker = _waiting_client(tracker, "--json", "task", "add", "never", "--wait", "60")
        client.kill()
        client.wait(timeout=10)
        await_exit(worker)
    finally:
        lock.release()
    assert "never" not in _here(tracker, "--json", "task", "list").stdout
    assert _served(tracker, "--json", "task", "add", "after").exit_code == 0


def test_a_worker_killed_by_a_signal_ends_its_client_by_that_signal(server: dict, tracker: Path) -> None:
    """Run here, a michi killed by signal N is seen by its caller as killed by N (-N to `subprocess`, not
    an exit code 128+N): served, the client dies of the same signal (ADR 0016)."""
    here = run_michi(
        tracker, "--json", "task", "add", "crash", env={"MICHI_SERVER": "off", "MICHI_FAULT": "locked"}
    )
    crashed = _served(tracker, "--json", "task", "add", "crash", MICHI_FAULT="locked")
    assert here.exit_code == crashed.exit_code == -signal.SIGKILL
    assert "served by" in crashed.stderr


@pytest.mark.parametrize(("sent", "ended"), [("SIGQUIT", -signal.SIGQUIT), ("SIGTERM", 0)])
def test_a_worker_ended_by_a_signal_ends_its_client_by_that_signal(
    server: dict, tracker: Path, sent: str, ended: int
) -> None:
    """A signal michi does not handle (SIGQUIT) kills michi run here; the served client, which passes it
    on, dies of it too rather than exiting 131. SIGTERM ends a command as Ctrl-C does (here `watch`:
    its way out, exit 0), served as run here (ADR 0004)."""
    client, worker = _waiting_client(tracker, "watch", "--interval", "60")
    wait_until(lambda: worker in [w["pid"] for w in _status()["workers"]], what="the worker")
    client.send_signal(getattr(signal, sent))
    client.communicate(timeout=30)
    assert client.returncode == ended
    await_exit(worker)


def test_no_live_server_or_a_foreign_folder_runs_here(
    tracker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ms-"))
    monkeypatch.setenv("MICHI_SERVER_DIR", str(folder))
    monkeypatch.delenv("MICHI_SERVER", raising=False)
    from michi.serve.address import Address

    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a server that died: its socket is left
    dead.bind(Address(str(folder)).socket)
    dead.close()
    result = _served(tracker, "--json", "task", "add", "here")
    assert result.exit_code == 0 and "served by" not in result.stderr
    folder.chmod(0o755)  # readable by others: nobody's socket there is trusted
    assert _here(tracker, "server", "start").exit_code != 0
    result = _served(tracker, "--json", "task", "list")
    assert result.exit_code == 0 and "served by" not in result.stderr


def test_one_server_per_build_and_it_stops_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tempfile.mkdtemp(prefix="ms-")
    monkeypatch.setenv("MICHI_SERVER_DIR", folder)
    first = _here(Path.cwd(), "--json", "server", "start", "--idle", "1").json()
    again = _here(Path.cwd(), "--json", "server", "start")
    assert again.json()["pid"] == first["pid"] and "already running" in again.json()["text"]
    second = subprocess.run([sys.executable, "-m", "michi.serve.server"], timeout=30)
    assert second.returncode == 0  # took one look at the lock and left
    await_exit(first["pid"], timeout=30)
    assert not _status()["running"]
    assert not any(name.endswith(".sock") for name in os.listdir(folder))


def test_auto_starts_the_server_for_the_next_call(tracker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tempfile.mkdtemp(prefix="ms-")
    monkeypatch.setenv("MICHI_SERVER_DIR", folder)
    debug = {"MICHI_DEBUG": "1"}
    first = run_michi(tracker, "--json", "task", "list", env={"MICHI_SERVER": "auto", **debug})
    assert first.exit_code == 0 and "served by" not in first.stderr
    wait_until(lambda: _status()["running"], timeout=60, what="the server")
    try:
        second = run_michi(
            tracker, "--json", "task", "list", env={"MICHI_SERVER": "auto", "MICHI_DEBUG": "1"}
        )
        assert second.exit_code == 0 and "served by" in second.stderr
        assert second.stdout == first.stdout
    finally:
        pid = _status()["pid"]
        _here(Path.cwd(), "server", "stop")
        await_exit(pid)


def test_the_client_stays_lean(server: dict, tracker: Path) -> None:
    """A served call imports none of michi's CLI, typer, rich, json or the socket module's enums (the
    interpreter's own start-up may have imported some already: only what the call adds counts)."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from michi.serve.client import served\n"
        "code = served(['--json', 'task', 'list'])\n"
        "heavy = sorted(m for m in ('typer', 'rich', 'michi.cli', 'json', 'socket', 'subprocess', 'enum',"
        " 'binascii') if m in sys.modules and m not in before)\n"
        "sys.stderr.write(f'code={code} heavy={heavy}\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tracker, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "MICHI_SERVER"},
    )  # fmt: skip
    assert "code=0 heavy=[]" in proc.stderr, proc.stderr


def test_the_installed_script_imports_no_more_than_the_client() -> None:
    """pip, pipx and uv install `scripts/michi` (pyproject's `script-files`, its `#!python` rewritten),
    not a script generated from an entry point, which imports `re` first (ADR 0016)."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["script-files"] == ["scripts/michi"]
    assert "michi" not in project["project"].get("scripts", {})  # two `michi`s: which one pip keeps is luck
    script = root / "scripts" / "michi"
    assert script.read_text().startswith("#!python\n") and os.access(script, os.X_OK)

    def imported(code: str) -> set[str]:
        # The command's end (`client.finish`) skips the interpreter's by `os._exit`: here it raises instead.
        probe = "import os, sys\ndef _exit(code):\n    raise SystemExit(code)\nos._exit = _exit\n"
        probe += f"sys.argv = ['michi', '--version']\ntry:\n{code}\nexcept SystemExit:\n    pass\n"
        probe += "sys.stderr.write(repr(sorted(sys.modules)))\n"
        proc = subprocess.run(
            [sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(root), "MICHI_SERVER": "off"},
        )  # fmt: skip
        assert proc.stdout.startswith("michi "), proc.stderr
        return set(eval(proc.stderr))

    source = f"open({str(script)!r}).read()"
    ran = imported(f"    exec(compile({source}, 'michi', 'exec'), {{'__name__': '__main__'}})")
    client = imported("    from michi.serve.client import main\n    raise SystemExit(main())")
    assert ran - client == set()


def test_the_client_imports_not_even_future() -> None:
    """`from __future__ import annotations` imports the `__future__` module: the modules every `michi`
    process imports before it knows whether a server takes the call go without it (`-S`: no site hook
    of this machine's interpreter imports it first)."""
    root = str(Path(__file__).resolve().parent.parent)
    probe = "import sys\nimport michi.serve.client, michi.serve.address\nprint('__future__' in sys.modules)\n"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": root},
    )  # fmt: skip
    assert proc.stdout.strip() == "False", proc.stderr


def test_a_worker_imports_nothing_the_server_did_not(tracker: Path) -> None:
    """Every module a command needs is imported once, in the server: one imported in the worker costs
    every served command its import again."""
    probe = (
        "import os, sys\n"
        "from michi.serve.server import preload\n"
        "preload()\n"
        "before = set(sys.modules)\n"
        "from michi.cli.main import main\n"
        "null = os.open(os.devnull, os.O_WRONLY)\n"
        "os.dup2(null, 1)\n"
        "os.dup2(null, 2)\n"
        "for args in (['--json', 'task', 'add', 'x'], ['task', 'done', '1'], ['task', 'list'],\n"
        "             ['--json', 'task', 'next', '--claim'], ['--help'], ['task', 'add', '--help']):\n"
        "    main(args)\n"
        "os.write(int(sys.argv[1]), repr(sorted(set(sys.modules) - before)).encode())\n"
    )
    read, write = os.pipe()
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(write)], cwd=tracker, timeout=120, pass_fds=(write,)
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read) as out:
        assert proc.returncode == 0
        assert out.read() == "[]"


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(n) for n in fh.read().split()]


def test_a_killed_server_leaves_nothing_waiting(server: dict, tracker: Path) -> None:
    """Its spare workers die with it; the next call runs here; a new server starts afresh."""
    spares = _children(server["pid"])
    assert spares, "the server keeps workers forked ahead"
    os.kill(server["pid"], signal.SIGKILL)
    for pid in spares:
        await_exit(pid)
    result = _served(tracker, "--json", "task", "list")
    assert result.exit_code == 0 and "served by" not in result.stderr
    again = _here(Path.cwd(), "--json", "server", "start").json()
    assert again["running"] and again["pid"] != server["pid"] and again["served"] == 0
    server["pid"] = again["pid"]  # for the fixture's stop


def test_a_worker_that_cannot_become_the_caller_runs_nothing(server: dict, tracker: Path) -> None:
    """A directory the server's worker cannot enter (here: gone once the request is sent) means the
    command runs in the caller's own process, once."""
    probe = (
        "import os, sys\n"
        "from michi.serve import client\n"
        "real = client._request\n"
        "def request(args):\n"
        "    data = real(args)\n"
        "    os.rmdir('gone')\n"  # the worker will not find the directory it was asked to work in
        "    os.chdir('..')\n"
        "    return data\n"
        "client._request = request\n"
        "sys.exit(client.served(['--json', '-C', '.', 'task', 'list']) is None and 7)\n"
    )
    (tracker / "gone").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tracker / "gone", capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 7, proc.stderr  # not served: the caller runs it
    assert _status()["served"] == 1


def test_the_servers_warm_up_parse_runs_nothing_and_prints_nothing(tracker: Path) -> None:
    """The server parses the served changes' command lines once before forking (`warm_parse`): with
    `--help`, so no command runs, nothing is read or written in the folder it starts in."""
    state = tracker / ".git" / "michi"
    before = sorted(p.name for p in state.iterdir()) if state.exists() else []
    head = git(tracker, "rev-parse", "HEAD")
    probe = (
        "import sys\n"
        "from michi.serve.server import preload, WARM_PARSES\n"
        "out, err = sys.stdout, sys.stderr\n"
        "preload()\n"
        "assert sys.stdout is out and sys.stderr is err\n"
        "print(len(WARM_PARSES))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tracker, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "5\n" and proc.stderr == ""
    assert (sorted(p.name for p in state.iterdir()) if state.exists() else []) == before
    assert git(tracker, "rev-parse", "HEAD") == head


def test_the_lock_is_never_served_even_after_the_end_of_options(server: dict, tracker: Path) -> None:
    """`michi -- lock acquire` is `michi lock acquire` to the parser: run in the caller's own process,
    its holder is the caller's script, not the server (whose long life would keep the lock live)."""
    acquired = _served(tracker, "--json", "--", "lock", "acquire")
    assert acquired.exit_code == 0, acquired.stderr
    assert "served by" not in acquired.stderr
    assert acquired.json()["pid"] != server["pid"]
    released = _here(tracker, "lock", "release", "--token", acquired.json()["token"])
    assert released.exit_code == 0, released.stderr


def _lowered() -> None:
    """In the client, before exec: a lower priority and a lower open-files limit than the server's."""
    import resource

    os.nice(3)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1000) - 7, hard))


def test_a_worker_takes_its_callers_limits_and_priority(server: dict, tracker: Path) -> None:
    """A `nice`d or `ulimit`ed caller's command runs with that priority and those limits, as it would
    in the caller's own process, not with the server's (ADR 0016)."""
    import resource

    lock = new_lock(tracker)
    lock.acquire(timeout=5)
    try:
        client = _adding(tracker, "limited", _lowered)
        assert client.stderr is not None
        line = client.stderr.readline()
        assert "worker PID" in line, line
        worker = int(line.rsplit("PID", 1)[1].strip(" )\n"))
        wait_until(lambda: worker in [w["pid"] for w in _status()["workers"]], what="the worker")
        assert os.getpriority(os.PRIO_PROCESS, worker) == os.getpriority(os.PRIO_PROCESS, client.pid)
        assert resource.prlimit(worker, resource.RLIMIT_NOFILE) == resource.prlimit(
            client.pid, resource.RLIMIT_NOFILE
        )
    finally:
        lock.release()
    out, _ = client.communicate(timeout=60)
    assert client.returncode == 0, out


def test_a_caller_in_another_namespace_runs_its_command_itself(server: dict, tracker: Path) -> None:
    """An agent in a sandbox of its own (here: user and mount namespaces) that can reach the socket is not
    served: a worker would run its command, and the repository's git hooks, outside the sandbox."""
    if subprocess.run(["unshare", "-Urm", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no unprivileged user namespaces here")
    proc = subprocess.run(
        ["unshare", "-Urm", sys.executable, "-m", "michi", "--json", "task", "add", "boxed"],
        cwd=tracker,
        capture_output=True,
        text=True,
        env={**os.environ, "MICHI_DEBUG": "1"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "served by" not in proc.stderr
    assert "boxed" in _here(tracker, "--json", "task", "list").stdout


def test_ctrl_c_before_the_command_began_says_interrupted_and_exits_130(tmp_path: Path) -> None:
    """A Ctrl-C the client passes on while the worker is still between taking the request and the
    command's own handling of it (on a busy machine, ms): the same answer as during the command, never
    a bare exit 1. Run in a process of its own (the worker's code, its command interrupted at once)."""
    script = (
        "import json, socket, sys\n"
        "from michi.serve import worker\n"
        "def interrupted(args):\n"
        "    raise KeyboardInterrupt\n"
        "worker._main = interrupted\n"
        "argv = ['michi', '--json', 'task', 'add', 'x']\n"
        "worker.receive = lambda conn: worker.Request(argv, '.', 0o22, [], [])\n"
        "worker._become = lambda request, client: None\n"
        "ours, theirs = socket.socketpair()\n"
        "code = worker._serve(ours, 0)\n"
        "said = theirs.recv(4096).decode()\n"
        "sys.stderr.write(f'CODE {code} SAID {said!r}\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert "CODE 130" in proc.stderr and "X130" in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "interrupted"
