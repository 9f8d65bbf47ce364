"""The remote lock's record (ADR 0009): `owner.json` in the commit the remote's lock ref names.

A record is either `held` (by the token in it) or `free` (released). A free record is never deleted: it
carries the last fence forward, so the next holder's fence is one more than every fence before it.
The wall-clock fields are for people reading `lock status`; expiry is judged from `ttl` and the
observer's own clock (`remote_seen`), never by comparing clocks of two machines.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from typing import Self

from michi.host import hostname
from michi.lock.record import Stamped, iso, parse_iso
from michi.strictjson import strict_json
from michi.unique import token_hex

REF = "refs/michi/lock"
FENCE_ENV = "MICHI_LOCK_FENCE"
REMOTE_TOKEN_ENV = "MICHI_REMOTE_LOCK_TOKEN"
RECORD_VERSION = 1
MAX_RECORD_BYTES = 64 * 1024  # far more than michi writes (a few hundred bytes); what is read of one


def _whole(value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"{value!r} is not a whole number")
    return value


def _number(value: object) -> int | float:
    if type(value) not in (int, float):
        raise TypeError(f"{value!r} is not a number")
    return value  # type: ignore[return-value]  # int or float, checked


def decode(raw: bytes) -> object:
    """The record's JSON, strictly: anyone who can push writes the ref, so NaN, Infinity, a number of
    thousands of digits, nesting deeper than the interpreter's stack or a size no record has (read only
    this far: `lockref.read_record`) is a corrupt record, never a crash nor a NaN passed on into --json
    output, nor megabytes of a "command" shown to a person."""
    if len(raw) > MAX_RECORD_BYTES:
        raise CorruptRemoteRecord(f"record is over {MAX_RECORD_BYTES:,} bytes, far larger than a record")
    try:
        return strict_json(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, NaN, huge integers
        raise CorruptRemoteRecord(f"record is not valid JSON ({len(raw)} bytes)") from None


class CorruptRemoteRecord(Exception):
    """The ref names a commit whose record cannot be read as one; carries the reason."""


@dataclass(frozen=True)
class RemoteRecord(Stamped):
    state: str  # held | free
    fence: int  # strictly increasing over every holder of this remote's lock
    token: str  # the holder's secret; also kept in a free record (who released last)
    host: str
    pid: int
    agent: str | None
    command: str
    created: str  # ISO 8601 UTC, the holder's wall clock: for people only
    renewed: str  # ISO 8601 UTC, when this record was written
    expires: str | None  # renewed + ttl, by the holder's wall clock: for people only
    ttl: float  # seconds the record stays valid unchanged; observers judge with their own clock
    version: int = RECORD_VERSION

    @property
    def held(self) -> bool:
        return self.state == "held"

    @classmethod
    def new(cls, *, fence: int, ttl: float, command: str, agent: str | None, pid: int | None = None) -> Self:
        now = time.time()
        return cls(
            state="held",
            fence=fence,
            token=token_hex(16),
            host=hostname(),
            pid=os.getpid() if pid is None else pid,
            agent=agent,
            command=command,
            created=iso(now) or "",
            renewed=iso(now) or "",
            expires=iso(now + ttl) if ttl else None,
            ttl=ttl,
        )

    def renewed_now(self, ttl: float | None = None) -> RemoteRecord:
        now, ttl = time.time(), self.ttl if ttl is None else ttl
        return replace(self, renewed=iso(now) or "", expires=iso(now + ttl) if ttl else None, ttl=ttl)

    def released(self) -> RemoteRecord:
        now = time.time()
        return replace(self, state="free", renewed=iso(now) or "", expires=None)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def message(self) -> str:
        """The commit message: what `git log` on the ref shows a person."""
        if not self.held:
            return f"michi lock: free (last fence {self.fence})"
        who = f"PID {self.pid} on {self.host}" + (f", agent {self.agent}" if self.agent else "")
        return f"michi lock: held by {who} (fence {self.fence})\n\n{self.command}"

    @classmethod
    def loads(cls, raw: bytes) -> RemoteRecord:
        data = decode(raw)
        if not isinstance(data, dict):
            raise CorruptRemoteRecord("record is not a JSON object")
        try:
            record = cls(
                state=str(data["state"]),
                fence=_whole(data["fence"]),
                token=str(data["token"]),
                host=str(data.get("host", "")),
                pid=_whole(data.get("pid", 0)),
                agent=None if data.get("agent") is None else str(data["agent"]),
                command=str(data.get("command", "")),
                created=str(data["created"]),
                renewed=str(data["renewed"]),
                expires=None if data.get("expires") is None else str(data["expires"]),
                ttl=float(_number(data["ttl"])),
                version=_whole(data.get("version", RECORD_VERSION)),
            )
            parse_iso(record.created), parse_iso(record.renewed), parse_iso(record.expires)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptRemoteRecord(f"record is missing or has a bad field ({exc})") from None
        if record.state not in ("held", "free") or record.fence < 0 or record.ttl < 0:
            raise CorruptRemoteRecord("record has a bad state, fence or ttl")
        return record
