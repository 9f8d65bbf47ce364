"""Group commit (ADR 0017): a process waiting for the repo lock hands its operation to the holder.

Files in `<git dir>/michi/group/`, one name (`STEM`: arrival time and txn) per handed operation:
`STEM.offer` is written by the waiter before it queues; the holder claims it by renaming it to
`STEM.taken` (rename is atomic: the holder's rename and the waiter's unlink at its deadline cannot both
succeed), journals it as its own entry, and writes `STEM.answer` (the outcome or the refusal) before it
releases the lock. A waiter whose offer was taken never gives up on it: it waits for the answer, or for
the lock (the holder died), and then finds its operation itself (`Offer.settle`); a signal it gets
meanwhile is held until it has answered (`signals.offered`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from michi import __version__
from michi.atomic import read_regular, write_atomic
from michi.errors import MichiError, Relayed
from michi.host import hostname
from michi.lock import procs
from michi.threads import held_back
from michi.workflow.journal import Entry
from michi.workflow.mutation import Mutation
from michi.workflow.request import TxnOutcome

FOLDER = "group"
OFFER, TAKEN, ANSWER = ".offer", ".taken", ".answer"
CAP = 16  # operations of others one holder takes per transaction
STALE = 3600.0  # seconds after which a claim whose waiter cannot be judged (another host's) is swept
# Operations that stay alone: an import's 10,000 records, init, migrate (they are rare and large).
SOLO = {"michi.tasks.create:import_tasks", "michi.tasks.create:init", "michi.tasks.migrate:to_fanout"}

FRESH, TAKEN_STATE, ANSWERED = "fresh", "taken", "answered"


class Offer:
    """The waiter's side: posted when it starts to wait, settled once it holds the lock or is answered."""

    def __init__(self, state_dir: Path, entry: Entry, target: dict[str, Any]) -> None:
        self.folder = state_dir / FOLDER
        self.entry = entry
        self.target = target
        self.stem = f"{time.monotonic_ns():020d}.{entry.txn}"
        self.posted = False
        self.settled = False  # we hold the lock: whatever became of the offer, the operation is ours
        self._taken = False  # a holder took it: it lands whatever we do

    def _path(self, suffix: str) -> Path:
        return self.folder / (self.stem + suffix)

    def post(self) -> None:
        """Offer the operation; best effort: where no offer can be written (a file where the folder goes,
        a full disk) the command waits and lands it itself, as without group commit. Posted once: a wait
        that goes on for a holder's answer after an interruption (`Transaction.run`) posts nothing again."""
        if self.posted:
            return
        e = self.entry
        offer = {
            "txn": e.txn,
            "mutation": e.mutation.to_json(),
            "command": e.command,
            "agent": e.agent,
            "base": e.base,
            # Who waits for it: an offer whose waiter is gone is nobody's to do (see `take`).
            "host": hostname(),
            "pid": os.getpid(),
            "ticks": procs.start_ticks(os.getpid()),
            **self.target,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not _real_folder(self.folder):
                return
            # A Ctrl-C between the file and `posted` would leave an offer nobody withdraws.
            with held_back():
                write_atomic(self._path(OFFER), json.dumps(offer).encode(), mode=0o600)
                self.posted = True
        except OSError:
            return

    def withdraw(self) -> bool:
        """True when the offer is ours again (or was never posted); False when a holder took it."""
        if not self.posted:
            return True
        with held_back():  # a Ctrl-C between the unlink and `posted` would take our own for a holder's
            try:
                os.unlink(self._path(OFFER))
            except FileNotFoundError:
                self._taken = True
                return False
            self.posted = False
        return True

    def taken(self) -> bool:
        """Whether a holder took the operation (its claim names our offer); once taken, always taken."""
        if not self._taken and self.posted:
            self._taken = os.path.lexists(self._path(TAKEN))
        return self._taken

    def answered(self) -> bool:
        return self.posted and self._path(ANSWER).is_file()  # a folder in its place is no answer

    def settle(self) -> str:
        """Under the lock: FRESH (nobody took it: run it as usual), ANSWERED, or TAKEN_STATE (taken by a
        holder that gave no answer: it died or failed; the journal, or nothing, holds the operation)."""
        self.settled = True
        if self.withdraw():
            return FRESH
        return ANSWERED if self.answered() else TAKEN_STATE

    def outcome(self) -> TxnOutcome:
        """The holder's answer: our outcome, or our operation's refusal raised here."""
        data = json.loads(read_regular(self._path(ANSWER)))
        if "error" in data:
            raise Relayed.decode(data["error"])
        return TxnOutcome.from_json(data["outcome"])

    def close(self) -> None:
        if self.posted:
            for suffix in (ANSWER, TAKEN):
                with contextlib.suppress(OSError):  # gone, or not a file of ours (a folder in its place)
                    os.unlink(self._path(suffix))


def target_of(
    remote: str | None, branch: str, work_tree: str, identity: tuple[bytes, bytes]
) -> dict[str, Any]:
    """What an offer must share with the holder that takes it: the same remote branch, the same code, the
    same work tree (the holder moves its own checkout, and its notes speak of its own HEAD) and the same
    author and committer (the holder writes the commit; agents may set GIT_AUTHOR_NAME each)."""
    who = [i.decode("utf-8", "backslashreplace") for i in identity]
    return {
        "remote": remote,
        "branch": branch,
        "version": __version__,
        "work_tree": work_tree,
        "identity": who,
    }


def take(state_dir: Path, target: dict[str, Any], base: str | None, cap: int = CAP) -> list[Entry]:
    """Claim up to `cap` waiting offers for the same target, oldest first, as journal entries."""
    folder = state_dir / FOLDER
    if not _real_folder(folder):
        return []  # no offers: none could be posted there
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    taken: list[Entry] = []
    for name in names:
        if not name.endswith(OFFER):
            if name.endswith((ANSWER, TAKEN)):
                _sweep(folder, name)
            continue
        if len(taken) >= cap:
            break
        path = folder / name
        try:
            data = json.loads(read_regular(path))
            if _waiter_gone(data):
                path.unlink()  # its waiter was killed before anyone took it: its command did nothing
                continue
            if any(data.get(k) != v for k, v in target.items()) or data["mutation"]["apply"] in SOLO:
                continue
            entry = Entry(
                str(data["txn"]),
                Mutation.from_json(data["mutation"]),
                str(data.get("command", "")),
                data.get("agent"),
                base=base,
                handed=name[: -len(OFFER)],
            )
            os.rename(path, folder / (entry.handed + TAKEN))  # type: ignore[operator]
        except FileNotFoundError:
            continue  # withdrawn meanwhile: the waiter gave up or took the lock itself
        except (OSError, ValueError, TypeError, KeyError):
            continue  # not an offer this code can read: left to its waiter's deadline
        taken.append(entry)
    return taken


def _waiter_gone(offer: Any) -> bool | None:
    """Whether the process that posted `offer` is gone; None when that cannot be judged here (it ran on
    another host, a git dir on a shared file system, or the file is not an offer)."""
    pid = offer.get("pid") if isinstance(offer, dict) else None
    if not isinstance(pid, int) or offer.get("host") != hostname():
        return None
    return not procs.alive(pid, offer.get("ticks"))


def _sweep(folder: Path, name: str) -> None:
    """A claim whose waiter is gone, and an answer whose claim is gone, are nobody's: delete them. A live
    waiter's claim stays however long it waits: were it swept, its answer would be dropped and the waiter
    would take its operation for one nobody did, and do it again."""
    path = folder / name
    with contextlib.suppress(OSError):
        if name.endswith(ANSWER):
            if not (folder / (name[: -len(ANSWER)] + TAKEN)).exists():
                path.unlink()
            return
        try:
            gone = _waiter_gone(json.loads(read_regular(path)))  # the offer it was, renamed
        except ValueError:
            gone = None
        # A claim that cannot be judged (another host's) is swept after an hour.
        if gone or (gone is None and time.time() - path.stat().st_mtime > STALE):
            path.unlink()
            (folder / (name[: -len(TAKEN)] + ANSWER)).unlink(missing_ok=True)


def _real_folder(folder: Path) -> bool:
    """Is `folder` a folder, not a link to one? Offers are never written, nor taken, through a link: one
    to a folder outside the repository had operations written there."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


def answer(state_dir: Path, stem: str, outcome: TxnOutcome | None, error: MichiError | None = None) -> None:
    """Tell the waiter behind `stem`; nothing when it has stopped waiting (its claim file is gone)."""
    folder = state_dir / FOLDER
    if not (folder / (stem + TAKEN)).exists():
        return
    body = (
        {"error": Relayed.encode(error)} if error is not None else {"outcome": outcome and outcome.to_json()}
    )
    write_atomic(folder / (stem + ANSWER), json.dumps(body).encode(), mode=0o600)


def eligible(mutation: Mutation, enabled: bool) -> bool:
    return enabled and mutation.apply not in SOLO
