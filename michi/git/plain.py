"""git through plain subprocesses, for the pre-commit hook's hot path (ADR 0005): no GitPython."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from michi.errors import GitFailed
from michi.git import environ

# Never handed to a git process michi starts: the lock's token lets commits past michi's pre-commit
# hook and releases the lock, and git passes its environment on to hooks, including a local remote's
# (ADR 0003). michi's own commits are built with plumbing and need no hook's consent.
SCRUBBED = frozenset({"MICHI_LOCK_TOKEN"})


# Where the caller's git looks, when told: a relative path is the caller's, from the folder michi was
# started in. michi runs git from the top of the work tree, where the same text would name another place
# (`cd .tasks && GIT_DIR=../.git GIT_WORK_TREE=.. michi task add x` failed, exit 5, "cat-file stopped").
# "Started in" is the folder the command acts in: `-C DIR`'s, as `git -C` reads them (a hook's
# `GIT_DIR=.git` and `michi -C ../other` name the other repository's `.git`).
PLACES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")


def child_env(
    extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a git process: `base` (os.environ) plus `extra`, without SCRUBBED names."""
    env = _scrubbed() if base is None else {k: v for k, v in base.items() if k not in SCRUBBED}
    here: str | None = None
    for name in PLACES:
        value = env.get(name)
        if value and not os.path.isabs(value) and name != "GIT_INDEX_FILE":
            # Read from the folder the command acts in, as git reads it after its `-C`: a real folder
            # (git's chdir resolved any symlink on the way, and `..` is taken from there).
            here = here or os.path.realpath(environ.acting_in or os.getcwd())
            env[name] = os.path.abspath(os.path.join(here, value))
    # A relative GIT_INDEX_FILE is left as it is: git opens it from the work tree's top, where git runs
    # once set up, and where michi starts its git processes.
    env.update({k: v for k, v in (extra or {}).items() if k not in SCRUBBED})
    return env


_kept: tuple[Mapping[str, str], dict[str, str]] | None = None  # os.environ as decoded, and scrubbed


def _scrubbed() -> dict[str, str]:
    """A fresh copy of os.environ without SCRUBBED names, scrubbed again only when it changed."""
    global _kept
    now = environ.current()
    if _kept is None or _kept[0] is not now:
        _kept = (now, {k: v for k, v in now.items() if k not in SCRUBBED})
    return dict(_kept[1])


def quick(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run one git command without GitPython; for the hot paths of the pre-commit hook only (ADR 0005)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=child_env(env),
        check=False,
    )
    if proc.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def staged_paths(worktree: Path) -> list[str]:
    """Paths the index changes relative to HEAD (what `git commit` is about to record)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames")
    return [p for p in out.split("\0") if p]


# Task files of both layouts in any folder (as `_is_task_file`: flat `.tasks/*.json` and fan-out
# `.tasks/<2 hex>/*.json`, ADR 0006), anchored at the top even when run from a subfolder.
TASK_PATHSPECS = (":(top,glob)**/.tasks/*.json", ":(top,glob)**/.tasks/[0-9a-f][0-9a-f]/*.json")


def staged_task_paths(worktree: Path) -> list[str]:
    """Task files the commit being made adds, changes or deletes (the pre-commit hook, ADR 0005)."""
    out = quick(worktree, "diff", "--cached", "--name-only", "-z", "--no-renames", "--", *TASK_PATHSPECS)
    return [p for p in out.split("\0") if p]


def hooks_dir(worktree: Path) -> Path:
    """Where git looks for hooks here: honours core.hooksPath and linked work trees."""
    out = quick(worktree, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip()
    return Path(out)


def config_get(worktree: Path, key: str) -> str | None:
    proc = subprocess.run(
        ["git", "config", "--get", key], cwd=worktree, capture_output=True, text=True, env=child_env()
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


# The CPU weight of work no lock waits for: a tenth of the usual one (nice 10), not the least (19), so a
# fetch still moves on a machine kept busy by other work.
YIELDING_NICE = 10
# Linux refuses a change of any autogroup's nice within 100 ms of the last one on the machine, to anyone
# without CAP_SYS_ADMIN (EAGAIN): a refused change is tried once more after that.
_GROUP_AGAIN = 0.11


def _yield_cpu(leader: int) -> bool:
    """A low CPU priority for the session `leader` began (ADR 0004): its processes' own (inherited by
    those they start from now on) and, where Linux groups a session's processes for the scheduler
    (autogroup), its group's. A new session is a group of its own that shares the cores with every other
    group as an equal, whatever its processes' nice: without the group's, a fetch took as large a share
    as another clone's lock holder pushing on the same cores. Best effort (not Linux, no autogroup,
    already ended); False only when the kernel asked to try the group's again later."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PGRP, leader, YIELDING_NICE)
    try:
        group = os.open(f"/proc/{leader}/autogroup", os.O_WRONLY)
    except OSError:
        return True
    try:
        os.write(group, str(YIELDING_NICE).encode())
    except BlockingIOError:
        return False
    except OSError:
        pass
    finally:
        os.close(group)
    return True


def _communicate_yielding(
    proc: subprocess.Popen[bytes], data: bytes | None, timeout: float | None
) -> tuple[bytes, bytes]:
    """`proc.communicate`, with the group's priority tried once more after the kernel's interval (unless
    it ended first)."""
    start = time.monotonic()
    try:
        return proc.communicate(data, timeout=_GROUP_AGAIN if timeout is None else min(_GROUP_AGAIN, timeout))
    except subprocess.TimeoutExpired:
        if timeout is not None and time.monotonic() - start >= timeout:
            raise
    _yield_cpu(proc.pid)
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
    return proc.communicate(None, timeout=left)  # the input, if any, is being written already


def run(cwd: Path, args: Sequence[str]) -> str:
    """Escape hatch for code paths that are not yet behind a named function; prefer a named one."""
    return quick(cwd, *args)


# A shell that runs its arguments only once told to: a line "go" on its stdin. It `exec`s them, so the
# command keeps the shell's pid and start time (what the journal records of a push). A pipe whose writer
# died reads end of file, and the shell then exits without running them.
_GATE = 'IFS= read -r go && [ "$go" = go ] && exec "$@"'
_GO = b"go\n"
GATE_NAME = "michi-gate"  # the shell's $0: a process whose arguments still show it never ran git


class NeverStarted(Exception):
    """The gate's shell was ended before it was told to go (`run_ended(named=)`): the command never ran."""


# What runs beside a started command: its pid, and what tells its exit status once it ended (None before).
OnStart = Callable[[int, Callable[[], int | None]], None]


def run_ended(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout: float | None,
    data: bytes | None = None,
    on_start: OnStart | None = None,
    outlives_us: bool = False,
    yielding: bool = False,
    named: Callable[[int], None] | None = None,
) -> tuple[int, bytes, bytes]:
    """(status, stdout, stderr) of a git call that talks to a remote. It runs in its own session, so that it
    and what it starts (ssh, a local remote's upload-pack or receive-pack and its hooks) are ended
    together, with SIGKILL, once it has run `timeout` seconds: then `subprocess.TimeoutExpired` is raised.
    `subprocess.run(timeout=)` kills the direct child only and leaves the rest running. An exception here
    ends it too, unless `outlives_us` (a push: it lands or not, ADR 0004). `on_start` gets its pid once it
    runs, and what tells its exit status once it ended (None before). `yielding`: work that no lock waits
    for, run at a low CPU priority (`_yield_cpu`). `named`: the command is held at a gate (`_GATE`) until
    `named(pid)` returned, so that a caller who must write the pid down first (the journal names a push,
    ADR 0004) never leaves behind a process it did not name: when `named` raises, or this process dies
    first, git never runs."""
    if named is not None:
        argv = ["/bin/sh", "-c", _GATE, GATE_NAME, *argv]
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL if data is None and named is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    if named is not None:
        try:
            named(proc.pid)
        except BaseException:
            proc.communicate(b"")  # the gate reads end of file: the shell exits, git never starts
            raise
        assert proc.stdin is not None
        try:
            proc.stdin.write(_GO)  # the gate opens (within the pipe's buffer: never blocks)
            proc.stdin.flush()
        except BrokenPipeError:  # the gate was ended meanwhile (by a holder that took over): git never ran
            proc.communicate()
            raise NeverStarted(proc.returncode) from None
    try:
        again = yielding and not _yield_cpu(proc.pid) and not outlives_us
        try:
            if on_start is not None:
                on_start(proc.pid, proc.poll)
        finally:
            if outlives_us:  # seen to its end even when `on_start` failed (ADR 0004)
                out, err = proc.communicate(data, timeout=timeout)
        if again:
            out, err = _communicate_yielding(proc, data, timeout)
        elif not outlives_us:
            out, err = proc.communicate(data, timeout=timeout)
    except BaseException as exc:
        if outlives_us and not isinstance(exc, subprocess.TimeoutExpired):
            raise
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out, err
