"""The transaction journal: what a lock holder is doing, so the next holder can finish it (ADR 0004).

Written before anything irreversible and cleared after the local branch is up to date. An entry left
behind means its holder died (SIGKILL, power loss of the process) or worked offline: the next
transaction applies its mutation again unless a commit carrying its `Michi-Txn` id already reached the
remote (see `michi.workflow.landed`). Before each push the journal also names the push's process, so the
next holder can make sure an orphaned push is over before it decides what landed (see `orphans`).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from michi.atomic import read_regular, write_atomic
from michi.plain import Plain
from michi.workflow.mutation import Mutation

STARTED, PUSHING, OFFLINE = "started", "pushing", "offline"
DAMAGED_SUFFIX = ".corrupt"


class Entry(Plain):
    __slots__ = (
        "agent",
        "base",
        "command",
        "commit",
        "handed",
        "ids",
        "mutation",
        "result",
        "state",
        "tree",
        "txn",
    )

    def __init__(
        self,
        txn: str,
        mutation: Mutation,
        command: str,
        agent: str | None,
        state: str = STARTED,
        commit: str | None = None,
        base: str | None = None,
        ids: dict[str, int] | None = None,
        handed: str | None = None,
        result: Any = None,
        tree: str | None = None,
    ) -> None:
        self.txn, self.mutation, self.command, self.agent, self.state = txn, mutation, command, agent, state
        self.commit = commit  # the commit last built for it (pushed or about to be)
        # The remote-tracking tip when the entry was first written: any commit carrying this txn that ever
        # landed is on the remote branch after it, so recognising it means scanning only `base..tip`.
        self.base = base
        self.ids = {} if ids is None else ids  # numeric ids it gave, by uuid (offline: provisional)
        # A waiting process's operation taken over by the holder (ADR 0017): its offer's name, so whoever
        # completes the entry answers that waiter; and the result of the commit last built for it, the
        # answer to give should that commit be found landed after a crash.
        self.handed, self.result = handed, result
        # The git dir of the work tree whose command wrote it: only there can a move it cut be finished.
        self.tree = tree

    def but(self, **changes: object) -> Entry:
        return Entry(**{**{name: getattr(self, name) for name in self._fields}, **changes})


class PushProcess(Plain):
    """The `git push` a holder started: it runs in its own session and outlives a SIGKILLed michi."""

    __slots__ = ("boot_id", "host", "pid", "start")

    def __init__(self, pid: int, start: float, host: str, boot_id: str) -> None:
        self.pid = pid
        self.start = start  # process start time (psutil), so a reused pid is never mistaken for it
        self.host, self.boot_id = host, boot_id


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "journal.json"
        self.damaged = False  # set by load(): an unreadable journal was moved aside
        self.kept_as = self.path.with_suffix(DAMAGED_SUFFIX)  # and there
        self.push: PushProcess | None = None  # set by load(): the last holder's push, if it recorded one
        self._encoded: dict[str, tuple[Mutation, str]] = {}  # txn -> (its mutation, that mutation's JSON)

    def load(self, keep_damaged: bool = False) -> list[Entry]:
        """The entries; [] with `damaged` set for a journal that cannot be read, which is moved aside as
        evidence unless `keep_damaged` (a reader outside the lock moves nothing: the next transaction
        does, under the lock, and says so)."""
        try:
            data = json.loads(read_regular(self.path).decode("utf-8"))
            entries = [_entry(e) for e in data.get("entries", [])]
            if len({e.txn for e in entries}) != len(entries):
                raise ValueError("an operation is in the journal twice")  # applied twice, it would land twice
            push = data.get("push")
            self.push = PushProcess(**push) if isinstance(push, dict) else None
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            # Only a damaged disk or a hand edit gets here (os.replace makes a half-written journal
            # impossible). Keep the evidence and say so: the caller looks for the stranded work itself.
            self.damaged = True
            if keep_damaged:
                return []
            self.kept_as = self.path.with_suffix(DAMAGED_SUFFIX)
            try:
                self.path.replace(self.kept_as)
            except OSError:  # something of another kind already there (a folder): keep both
                self.kept_as = self.path.with_suffix(f".{time.time_ns()}{DAMAGED_SUFFIX}")
                self.path.replace(self.kept_as)
            return []
        return entries

    def save(self, entries: list[Entry], push: PushProcess | None = None) -> None:
        if not entries:
            self.clear()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # An import's entry holds 10,000 records and is saved three times per transaction (ADR 0015):
        # each mutation is encoded once (compact: `indent` makes json use its pure Python encoder) and
        # spliced into the body, which is otherwise what json.dumps makes of it.
        parts = [self._entry_text(e) for e in entries]
        text = '{"entries":[' + ",".join(parts) + "]"
        if push is not None:
            found = {"pid": push.pid, "start": push.start, "host": push.host, "boot_id": push.boot_id}
            text += ',"push":' + _compact(found)
        write_atomic(self.path, (text + "}").encode())

    def _entry_text(self, entry: Entry) -> str:
        known = self._encoded.get(entry.txn)
        if known is None or known[0] is not entry.mutation:
            known = self._encoded[entry.txn] = (entry.mutation, _mutation_json(entry.mutation))
        head = _compact({**_record(entry), "mutation": None})
        return head[: -len('"mutation":null}')] + '"mutation":' + known[1] + "}"

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_TXN = re.compile(r"[0-9a-f]{1,64}")  # what `Michi-Txn` trailers hold (recovery looks them up by it)
_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_TEXT_OR_NONE = ("agent", "handed", "tree")


# id(value) -> (the value, kept alive; its `_compact` JSON), for params encoded ahead (see `known_json`)
_KNOWN: dict[int, tuple[Any, str]] = {}


def known_json(value: Any) -> None:
    """Encode `value` now, by whoever has the time (an import's thread encodes the next chunk's 10,000
    records while git lands this one, ADR 0015): a mutation whose param is this very object (unchanged
    since) is journaled with that text. `forget_json` when the mutation is done."""
    _KNOWN[id(value)] = (value, _compact(value))


def forget_json(value: Any) -> None:
    found = _KNOWN.get(id(value))
    if found is not None and found[0] is value:
        del _KNOWN[id(value)]


def _mutation_json(mutation: Mutation) -> str:
    """`_compact(mutation.to_json())`, taking the JSON of a param from `known_json` when there is one."""
    texts = {}
    for key, value in mutation.params.items():
        found = _KNOWN.get(id(value))
        if found is not None and found[0] is value:
            texts[key] = found[1]
    if not texts:
        return _compact(mutation.to_json())
    params = ",".join(
        _compact(key) + ":" + (texts[key] if key in texts else _compact(value))
        for key, value in mutation.params.items()
    )
    return '{"apply":' + _compact(mutation.apply) + ',"params":{' + params + "}}"


def _entry(e: dict[str, Any]) -> Entry:
    """An entry as `save` wrote it; anything else raises (ValueError, TypeError, KeyError), and the journal
    is damaged: an entry whose txn is no id could never be recognised on the remote, and would land again."""
    txn, state = e["txn"], e.get("state", STARTED)
    if not (isinstance(txn, str) and _TXN.fullmatch(txn)) or state not in (STARTED, PUSHING, OFFLINE):
        raise ValueError(f"entry {txn!r} is not one michi wrote")
    for key in ("commit", "base"):
        if e.get(key) is not None and not (isinstance(e[key], str) and _OID.fullmatch(e[key])):
            raise ValueError(f"entry {txn}: {key} is not a commit id")
    if not isinstance(e.get("command", ""), str) or any(
        e.get(k) is not None and not isinstance(e[k], str) for k in _TEXT_OR_NONE
    ):
        raise ValueError(f"entry {txn}: a field is not text")
    return Entry(
        txn=txn,
        mutation=Mutation.from_json(e["mutation"]),
        command=str(e.get("command", "")),
        agent=e.get("agent"),
        state=str(e.get("state", STARTED)),
        commit=e.get("commit"),
        base=e.get("base"),
        ids={str(k): int(v) for k, v in (e.get("ids") or {}).items()},
        handed=e.get("handed"),
        result=e.get("result"),
        tree=e.get("tree"),
    )


def _record(e: Entry) -> dict[str, Any]:
    """An entry's fields but its mutation (`Journal._entry_text` adds that, encoded once)."""
    record = {
        "txn": e.txn,
        "command": e.command,
        "agent": e.agent,
        "state": e.state,
        "commit": e.commit,
        "base": e.base,
        "ids": e.ids,
    }
    if e.handed is not None:
        record.update(handed=e.handed, result=e.result)
    if e.tree is not None:
        record.update(tree=e.tree)
    return record
