"""Fixtures shared by every test: an environment isolated from the user's machine, real git repos.

No test may read the user's git config or home directory (DEVELOPERS.md): `isolated_env` is autouse.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from michi.cli.main import main as michi_main

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
}


CHECKOUT = str(Path(__file__).resolve().parent.parent)


def _signals_as_at_a_terminal() -> None:
    """A suite started in the background (`cmd &` in a script, `nohup`) inherits SIGINT, SIGQUIT or SIGHUP
    ignored, and so would every process a test starts: the tests of Ctrl-C and hang-up would then test
    the launcher. They are put back to what a terminal gives (an ignored signal stays ignored across exec,
    a handled one does not)."""
    for signum, handler in (
        (signal.SIGINT, signal.default_int_handler),
        (signal.SIGQUIT, signal.SIG_DFL),
        (signal.SIGHUP, signal.SIG_DFL),
    ):
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, handler)


_signals_as_at_a_terminal()
GITCONFIG = "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"


def _is_users(name: str) -> bool:
    """An environment variable of the user's that would reach into a test's git or michi."""
    return name.startswith(("MICHI_", "GIT_")) or name in {"TASKRC", "TASKDATA"}


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(GITCONFIG)
    for name in list(os.environ):
        if _is_users(name):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    monkeypatch.setenv("MICHI_SERVER", "off")  # a test that wants the server (ADR 0016) says so
    # Every michi process a test starts runs this checkout, whatever copy the environment has installed.
    rest = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", CHECKOUT + (os.pathsep + rest if rest else ""))
    # ... with its bytecode, as users' michi has: without it each of the suite's thousands of michi
    # processes compiled every module it imports again (about a third of its start).
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    return home


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout.strip()


@dataclass
class Remote:
    """A bare origin with one initial commit on main, and a factory of clones."""

    bare: Path
    root: Path

    def clone(self, name: str) -> Path:
        path = self.root / name
        # Over git's protocol, not by copying the object folder: a push still being received (an orphaned
        # one, a test's held hook) has a `tmp_objdir-incoming-*` folder there that vanishes mid-copy.
        git(self.root, "clone", "-q", "--no-local", str(self.bare), str(path))
        return path

    def head(self, branch: str = "main") -> str:
        return git(self.bare, "rev-parse", f"refs/heads/{branch}")


@pytest.fixture(scope="session")
def _templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repositories `remote` and `local_repo` start from, made once per session with real git and
    copied for each test (a copy of a directory is a fraction of git's init, commit and push). They are
    made in an environment as isolated as `isolated_env`'s, which a session fixture cannot use."""
    root = tmp_path_factory.mktemp("templates")
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(GITCONFIG)
    env = {name: value for name, value in os.environ.items() if not _is_users(name)}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        **GIT_IDENTITY,
    )

    def run(cwd: Path, *args: str) -> None:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"

    for name in ("seed", "local"):  # one commit each; seed's is pushed to the bare origin
        run(root, "init", "-q", "-b", "main", name)
        (root / name / "README.md").write_text("hello\n")
        run(root / name, "add", "README.md")
        run(root / name, "commit", "-q", "-m", "initial commit")
    run(root, "init", "-q", "--bare", "-b", "main", "origin.git")
    run(root / "seed", "push", "-q", str(root / "origin.git"), "main")
    return root


def _copy(template: Path, to: Path) -> Path:
    shutil.copytree(template, to, symlinks=True)  # neither repository names its own path: both move
    return to


@pytest.fixture
def remote(tmp_path: Path, _templates: Path) -> Remote:
    """A bare origin (`origin.git`) with one initial commit on main, pushed from `seed` beside it."""
    _copy(_templates / "seed", tmp_path / "seed")
    return Remote(bare=_copy(_templates / "origin.git", tmp_path / "origin.git"), root=tmp_path)


@pytest.fixture
def repo(remote: Remote) -> Path:
    """One clone of `remote`, the usual place to run michi."""
    return remote.clone("work")


@pytest.fixture
def local_repo(tmp_path: Path, _templates: Path) -> Path:
    """A repository with one commit and no remote."""
    return _copy(_templates / "local", tmp_path / "local")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run michi in-process (fast): `cli(repo, "task", "add", "x", "--json")`."""

    def run(cwd: Path, *args: str) -> CliResult:
        capsys.readouterr()
        code = michi_main(["-C", str(cwd), *args])
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


def run_michi(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> CliResult:
    """Run michi as a real separate process, as agents do."""
    proc = subprocess.run(
        [sys.executable, "-m", "michi", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def spawn_michi(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start michi as a separate process and return at once (stdout and stderr piped, text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "michi", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def michi_proc() -> Iterator[Callable[..., CliResult]]:
    yield run_michi


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores and the split from one item on: a few tasks take 50,000's path (`michi.tasks.twocore`)."""
    from michi.tasks import twocore

    monkeypatch.setattr(twocore, "FROM", 1)
    monkeypatch.setattr(twocore, "_cores", lambda: 2)
    monkeypatch.delenv("MICHI_ONE_CORE", raising=False)
