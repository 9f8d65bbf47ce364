"""The lock's owner record (`.michi.lock/owner.json`) and the judgement whether its holder is alive.

Shared by the lock, `michi lock status` and the pre-commit hook, so it imports nothing heavy: a holder is
identified by PID, raw start ticks and boot id (`procs`), never by a wall-clock value (ADR 0003).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from michi.atomic import write_atomic
from michi.host import hostname
from michi.lock import procs
from michi.plain import Plain

OWNER_FILE = "owner.json"
RECORD_VERSION = 2
# The record is a few hundred bytes; anything larger is not ours and is never read whole (ADR 0003).
MAX_RECORD_BYTES = 64 * 1024
# The command a record names, for people: cut to this many characters (a 100 KB annotation on the command
# line made the holder's own record too large to read, and every retry lost the lock).
COMMAND_CHARS = 200
# A lock dir without a readable owner record is a holder that crashed between mkdir and publishing the
# record, or one that is publishing right now: give it this long before calling it stale (ADR 0003).
MISSING_RECORD_GRACE = 2.0
# Token handed to child processes of the holder, so the pre-commit hook can let their commits through.
TOKEN_ENV = "MICHI_LOCK_TOKEN"
# The hold's fencing token, handed to `lock run`'s command: higher for every later hold (ADR 0003).
FENCE_ENV = "MICHI_LOCK_FENCE"


class CorruptRecord(Exception):
    """The owner record exists but cannot be read as a record; carries the reason."""


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: Any) -> float | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    # fromisoformat is C code; strptime's first call costs ~15 ms of imports and regexes inside the lock.
    return datetime.fromisoformat(text).timestamp()


_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)


def boot_clock() -> float:
    """Seconds since boot, suspend included (CLOCK_BOOTTIME): one clock for every process of this boot,
    which no wall-clock step (NTP, `date -s`, a VM resume) moves."""
    return time.clock_gettime(_BOOTTIME)


_boot_id_cache: str | None = None


def boot_id() -> str:
    """Linux's per-boot id: a PID from an earlier boot proves nothing about a process now."""
    global _boot_id_cache
    if _boot_id_cache is None:
        try:
            _boot_id_cache = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        except OSError:
            _boot_id_cache = ""
    return _boot_id_cache


_pid_namespace_cache: str | None = None


def pid_namespace() -> str:
    """This process's PID namespace (`pid:[4026531836]`), "" where unknown: a PID recorded in another
    one (a sandbox's `--unshare-pid`, a container sharing the host's name and kernel) names another
    process here, or none."""
    global _pid_namespace_cache
    if _pid_namespace_cache is None:
        try:
            _pid_namespace_cache = os.readlink("/proc/self/ns/pid")
        except OSError:
            _pid_namespace_cache = ""
    return _pid_namespace_cache


def process_start(pid: int) -> float | None:
    """Start time of `pid` as psutil reports it, or None when there is no such (live) process. On Linux
    it is read from /proc as psutil reads it: every acquire records its own start time, and importing
    psutil would cost each changing command ~15-30 ms (ADR 0010)."""
    if sys.platform.startswith("linux") and pid > 0:
        known, started = _proc_start(pid)
        if known:
            return started
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # killed but not yet reaped: dead for our purposes
            return None
        return float(proc.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


_boot_time_cache: float | None = None
_UNREADABLE: tuple[bool, float | None] = (False, None)


def _proc_start(pid: int) -> tuple[bool, float | None]:
    """psutil's `create_time()` on Linux: field 22 of /proc/PID/stat (clock ticks since boot) plus the
    boot time (`btime` in /proc/stat). (True, None) for no such process or a zombie; (False, None) when
    /proc cannot say (then psutil decides)."""
    global _boot_time_cache
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return True, None
    except OSError:
        return _UNREADABLE
    fields = data[data.rfind(b")") + 2 :].split()  # the name, in parentheses, may hold anything
    if len(fields) < 20:
        return _UNREADABLE
    if fields[0] == b"Z":
        return True, None
    if _boot_time_cache is None:
        try:
            with open("/proc/stat", "rb") as stat:
                line = next((ln for ln in stat if ln.startswith(b"btime")), b"")
            _boot_time_cache = float(line.split()[1])
        except (OSError, IndexError, ValueError):
            return _UNREADABLE
    return True, float(fields[19]) / os.sysconf("SC_CLK_TCK") + _boot_time_cache


class Stamped:
    """What the local and the remote lock's records share: `created` and `expires` written as ISO text,
    read back as epoch seconds; the record's JSON is its fields."""

    created: str
    expires: str | None

    @property
    def created_ts(self) -> float:
        return parse_iso(self.created) or 0.0

    @property
    def expires_ts(self) -> float | None:
        return parse_iso(self.expires)

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self))  # type: ignore[call-overload]  # every subclass is a dataclass


@dataclass(frozen=True)
class Nested:
    """A hold taken under the lock's holder (ADR 0003): its holder (`--pid`, else the script), the script
    that took it, and its own token, which michis started with it work under as under the holder's."""

    pid: int
    ticks: int | None
    token: str
    by: tuple[int, int | None] | None = None

    @classmethod
    def from_json(cls, data: Any) -> Nested:
        if isinstance(data, list):  # [PID, start ticks]: `nested` as michis before nested tokens wrote it
            pid, ticks = data
            return cls(int(pid), _opt_int(ticks), "")
        if not isinstance(data, dict):
            raise ValueError("not a nested hold")
        token = str(data.get("token") or "")
        return cls(int(data["pid"]), _opt_int(data.get("ticks")), token, _process(data.get("by")))


@dataclass(frozen=True)
class Owner(Stamped):
    pid: int
    host: str
    boot_id: str
    pid_ticks: int | None  # the holder's start, clock ticks after boot (procs.py); None where unknown
    created: str  # ISO 8601 UTC
    expires: str | None  # ISO 8601 UTC; None = no lease expiry (a record from before leases had to end)
    token: str
    command: str
    agent: str | None
    fence: int = 0  # strictly increasing per repository: every acquisition gets a higher one
    pgid: int | None = None  # `lock run`: the process group its command runs in
    pgid_ticks: int | None = None  # that group leader's start ticks (tells the group from a later one)
    version: int = RECORD_VERSION
    pidns: str = ""  # the PID namespace its PIDs are numbers in (`pid_namespace`); "" in older records
    # `expires` on this boot's `boot_clock`: the lease as this machine judges it, whatever the wall clock
    # does meanwhile (`lease_over`); None in older records and where unknown.
    expires_boot: float | None = None
    # A script holder's subshells between it and michi, as (PID, start ticks): the lock is its while any of
    # them runs, so `( token=$(michi lock acquire); ...; michi lock release ) &` keeps it after the
    # script itself exits (`procs.script_chain`).
    forks: tuple[tuple[int, int | None], ...] = ()
    # Holds taken under this one (`michi lock acquire` under `lock run`, or in a script under a script's
    # lock), each with a token of its own: its release ends that hold only (ADR 0003).
    nested: tuple[Nested, ...] = ()
    # The script that ran `michi lock acquire` (another process than `pid` with `--pid`): a release it
    # makes with this hold's token is the outer one, whatever it nested since. None for `lock run`.
    by: tuple[int, int | None] | None = None

    @classmethod
    def new(
        cls, *, pid: int, token: str, ttl: float | None, command: str, agent: str | None, fence: int = 0
    ) -> Owner:
        now = time.time()
        return cls(
            pid=pid,
            host=hostname(),
            boot_id=boot_id(),
            pid_ticks=procs.start_ticks(pid),
            created=iso(now) or "",
            expires=iso(now + ttl) if ttl else None,
            token=token,
            command=command,
            agent=agent,
            fence=fence,
            pidns=pid_namespace(),
            expires_boot=round(boot_clock() + ttl, 3) if ttl else None,
        )

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        # `nested` keeps the shape michis before nested tokens read ([PID, start ticks]): one of them, still
        # running (a `michi mcp`), found anything else a corrupt record, stale after its grace.
        data["nested_holds"] = data["nested"]
        data["nested"] = [[held["pid"], held["ticks"]] for held in data["nested_holds"]]
        return data

    def admits(self, token: str) -> bool:
        """Whether `token` is this hold's or one of its nested holds' (a michi started with either works
        under this lock, and a commit made with either is the holder's own)."""
        return bool(token) and (token == self.token or any(n.token == token for n in self.nested))

    def renewed(self, ttl: float, *, never_shorter: bool = False) -> Owner:
        """This record with its lease running `ttl` seconds from now (both clocks); `never_shorter` keeps
        a lease that already runs longer (a nested holder's renewal must not cut its holder's)."""
        if not ttl:
            return replace(self, expires=None, expires_boot=None)
        expires, on_boot = time.time() + ttl, boot_clock() + ttl
        if never_shorter:
            if self.expires is None:
                return self
            expires = max(expires, self.expires_ts or 0.0)
            on_boot = max(on_boot, self.expires_boot or 0.0)
        return replace(self, expires=iso(expires), expires_boot=round(on_boot, 3))

    @classmethod
    def from_json(cls, data: Any) -> Owner:
        if not isinstance(data, dict):
            raise CorruptRecord("owner record is not a JSON object")
        try:
            owner = cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                boot_id=str(data.get("boot_id", "")),
                pid_ticks=_opt_int(data.get("pid_ticks")),
                created=str(data["created"]),
                expires=None if data.get("expires") is None else str(data["expires"]),
                token=str(data["token"]),
                command=str(data.get("command", "")),
                agent=None if data.get("agent") is None else str(data["agent"]),
                fence=int(data.get("fence") or 0),
                pgid=_opt_int(data.get("pgid")),
                pgid_ticks=_opt_int(data.get("pgid_ticks")),
                version=int(data.get("version", RECORD_VERSION)),
                pidns=str(data.get("pidns") or ""),
                expires_boot=None if data.get("expires_boot") is None else float(data["expires_boot"]),
                forks=_processes(data.get("forks")),
                nested=_nested(data.get("nested_holds", data.get("nested"))),
                by=_process(data.get("by")),
            )
            owner.created_ts  # noqa: B018 - validates the timestamps now, not later
            owner.expires_ts  # noqa: B018
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise CorruptRecord(f"owner record is missing or has a bad field ({str(exc)[:80]})") from None
        if owner.pid <= 0 or not owner.token:
            raise CorruptRecord("owner record has no valid pid or token")
        return owner


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _process(value: Any) -> tuple[int, int | None] | None:
    if value is None:
        return None
    pid, ticks = value
    return int(pid), _opt_int(ticks)


def _nested(value: Any) -> tuple[Nested, ...]:
    if not value:
        return ()
    if not isinstance(value, list) or len(value) > 256:
        raise ValueError("not a list of nested holds")
    return tuple(Nested.from_json(item) for item in value)


def _processes(value: Any) -> tuple[tuple[int, int | None], ...]:
    """[[PID, start ticks], ...] as written by `to_json`; at most a few dozen are ever recorded."""
    if not value:
        return ()
    if not isinstance(value, list) or len(value) > 256:
        raise ValueError("not a list of processes")
    return tuple((int(pid), _opt_int(ticks)) for pid, ticks in value)


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read_owner(lock_dir: Path) -> Owner | None:
    """The published record; None when there is none (yet). Raises CorruptRecord when unreadable.

    Opened without following a symlink and without blocking (a FIFO), and read only if it is a regular
    file under MAX_RECORD_BYTES: nothing placed there can hang or exhaust whoever looks (ADR 0003).
    """
    path = lock_dir / OWNER_FILE
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise CorruptRecord(f"{lock_dir} is not a directory") from None
    except OSError as exc:
        if os.path.islink(path):
            raise CorruptRecord(f"{OWNER_FILE} is a symlink") from None
        raise CorruptRecord(f"{OWNER_FILE} cannot be opened ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise CorruptRecord(f"{OWNER_FILE} is {kind}")
        if st.st_size > MAX_RECORD_BYTES:
            raise CorruptRecord(f"{OWNER_FILE} is {st.st_size} bytes, far larger than a record")
        raw = os.read(fd, MAX_RECORD_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_RECORD_BYTES:
        raise CorruptRecord(f"{OWNER_FILE} is far larger than a record")
    try:
        return Owner.from_json(json.loads(raw))
    except (ValueError, RecursionError):  # also UnicodeDecodeError, and an integer past int's digit limit
        raise CorruptRecord(f"owner record is not valid JSON ({len(raw)} bytes)") from None


def token_of(lock_dir: Path) -> str | None:
    """The token of the published record; None when there is none or it cannot be read."""
    try:
        owner = read_owner(lock_dir)
    except CorruptRecord:
        return None
    return owner.token if owner is not None else None


def write_owner(lock_dir: Path, owner: Owner) -> None:
    """Publish atomically: readers see the old record or the new one, never half of one. 0600: the
    token in it is what lets commits past the hook and releases the lock."""
    write_atomic(lock_dir / OWNER_FILE, (json.dumps(owner.to_json(), indent=2) + "\n").encode(), mode=0o600)


class Judgement(Plain):
    __slots__ = ("orphans", "reason", "stale")

    def __init__(self, stale: bool, reason: str, orphans: tuple[int, ...] = ()) -> None:
        self.stale = stale
        # live | orphans | expired | dead | pid_reused | rebooted | no_record | corrupt | publishing
        self.reason = reason
        # Running members of a dead holder's process group (reason "orphans"): the lock is not stale while
        # they run; whoever takes it over ends them first (ADR 0003).
        self.orphans = orphans

    def __bool__(self) -> bool:  # pragma: no cover - guard against `if judgement:` mistakes
        raise TypeError("use judgement.stale")


def same_machine(owner: Owner) -> bool:
    """Same host and, where known, same boot and PID namespace: only then do its PIDs mean anything here."""
    return (
        owner.host == hostname()
        and not (owner.boot_id and boot_id() and owner.boot_id != boot_id())
        and not (owner.pidns and pid_namespace() and owner.pidns != pid_namespace())
    )


def judge(owner: Owner | None, *, lock_mtime: float, now: float | None = None) -> Judgement:
    """Is the holder provably gone or its lease over? A holder on another host is never judged by PID.

    A dead holder whose `lock run` command left processes in its group still holds the lock: they are
    doing its work. An expired lease is stale even if its holder lives (paused); its taker ends such a
    group first on this machine (`repolock._unguarded`), and fencing covers the rest.
    """
    now = time.time() if now is None else now
    if owner is None:
        if now - lock_mtime < MISSING_RECORD_GRACE:
            return Judgement(False, "publishing")
        return Judgement(True, "no_record")
    if owner.host != hostname() or (owner.pidns and pid_namespace() and owner.pidns != pid_namespace()):
        # Another host's PIDs, or another PID namespace's on this one: only the lease can tell.
        return Judgement(True, "expired") if lease_over(owner, now) else Judgement(False, "live")
    if owner.boot_id and boot_id() and owner.boot_id != boot_id():
        return Judgement(True, "rebooted")
    started = procs.start_ticks(owner.pid)
    gone = None
    if started is None:
        gone = "dead"
    elif owner.pid_ticks is not None and procs.HAS_PROC and started != owner.pid_ticks:
        gone = "pid_reused"
    if gone is not None and any(procs.alive(pid, ticks) for pid, ticks in owner.forks):
        gone = None  # the script exited, but the subshell that took the lock for it still runs
    if gone is not None:
        orphans = procs.group_members(owner.pgid, owner.pgid_ticks) if owner.pgid else []
        if orphans:
            return Judgement(False, "orphans", tuple(orphans))
        return Judgement(True, gone)
    if lease_over(owner, now):
        return Judgement(True, "expired")
    return Judgement(False, "live")


def lease_over(owner: Owner, now: float) -> bool:
    """Whether the holder's lease ran out. On the machine and boot it was written on, by the boot clock
    (`expires_boot`): judged by the wall clock, a step forward (NTP, `date -s`) made a live holder that
    was never paused look expired, and its command was ended. Elsewhere the wall clock is all there is."""
    left = lease_left(owner, now)
    return left is not None and left <= 0


def lease_left(owner: Owner, now: float) -> float | None:
    """Seconds of lease left (negative: over), by the clock `lease_over` judges it by; None: no expiry."""
    on_boot = owner.expires_boot
    if on_boot is not None and owner.boot_id and owner.boot_id == boot_id() and same_machine(owner):
        return on_boot - boot_clock()
    expires = owner.expires_ts
    return None if expires is None else expires - now
