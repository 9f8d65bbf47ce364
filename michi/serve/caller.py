"""Whether a served worker can become its caller, and the caller's process limits (ADR 0016).

A worker forked from the server runs where the server runs: its mount, PID, network and user
namespaces, its root folder, its resource limits and its scheduling priority, not the caller's. The
environment, directory and umask are passed over the socket; these cannot be. So a worker takes the
caller's resource limits and niceness (each only ever lowered from the server's, which is allowed), and
when it cannot be the caller's exact twin (another namespace or root: a sandboxed or containerised
agent reaching the user's server through a shared socket folder; a limit or priority above the
server's) it runs nothing: the caller runs the command in its own process, inside its own sandbox.
"""

from __future__ import annotations

import os
import resource

NAMESPACES = ("mnt", "pid", "net", "user", "ipc", "uts")
LIMITS = tuple(
    getattr(resource, name)
    for name in (
        "RLIMIT_AS",
        "RLIMIT_CORE",
        "RLIMIT_CPU",
        "RLIMIT_DATA",
        "RLIMIT_FSIZE",
        "RLIMIT_NOFILE",
        "RLIMIT_NPROC",
        "RLIMIT_STACK",
        "RLIMIT_MEMLOCK",
    )
    if hasattr(resource, name)
)


class Elsewhere(Exception):
    """The caller is not where this worker is, or has what it cannot take on."""


def become(client: int) -> None:
    """Take `client`'s limits and priority, after checking it shares this process's world."""
    here, there = "/proc/self", f"/proc/{client}"
    try:
        for ns in NAMESPACES:
            if _same(f"{here}/ns/{ns}") != _same(f"{there}/ns/{ns}"):
                raise Elsewhere(f"another {ns} namespace")
        if _same(f"{here}/root") != _same(f"{there}/root"):
            raise Elsewhere("another root folder")
        limits = {which: resource.prlimit(client, which) for which in LIMITS}
        nice = os.getpriority(os.PRIO_PROCESS, client)
    except OSError as exc:  # gone, or not ours to look at: no doubt is served
        raise Elsewhere(str(exc)) from exc
    for which, wanted in limits.items():
        if resource.getrlimit(which) != wanted:
            try:
                resource.setrlimit(which, wanted)
            except (OSError, ValueError) as exc:  # above this process's hard limit
                raise Elsewhere(f"limit {which}: {exc}") from exc
    if os.getpriority(os.PRIO_PROCESS, 0) != nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as exc:  # a higher priority than the server's needs a privilege
            raise Elsewhere(f"priority {nice}: {exc}") from exc


def _same(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino
