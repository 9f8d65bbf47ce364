"""One michi transaction: lock, (fetch), apply, commit, push, update local, release (ADR 0004).

Commits are built with plumbing on the remote tip, never from the user's index, so the user's staged,
unstaged and untracked work and unpushed commits cannot leak into them. The push is optimistic: michi
builds on the last-known remote tip and fetches only when the remote says it moved on (or when the
mutation refuses on a state that may be stale), then applies the mutation again to the new state.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from michi import faults, git
from michi.errors import (
    GitFailed,
    Interrupted,
    LockError,
    MichiError,
    RemoteRejected,
    RemoteUnreachable,
    RepoBusy,
    best_effort,
)
from michi.host import hostname
from michi.unique import uuid4_hex
from michi.workflow import group, orphans, recovery, rewound, stranded
from michi.workflow.attributes import AttributeFiles
from michi.workflow.journal import OFFLINE, PUSHING, Entry, Journal
from michi.workflow.local import UPDATE_MESSAGE, checked_out_in, held_elsewhere, move_checkout, update_local
from michi.workflow.mutation import ApplyContext, Change, Mutation
from michi.workflow.owned import safe_path
from michi.workflow.request import TxnOutcome, TxnRequest
from michi.workflow.signals import interruptions_deferred, offered, resume
from michi.workflow.snapshot import marker_time, touch_marker
from michi.workflow.target import Target, resolve
from michi.workflow.tree import GitTaskTree

if TYPE_CHECKING:
    from pathlib import Path

    from michi.git import Repo
    from michi.git.plain import OnStart
    from michi.lock import RepoLock
    from michi.workflow.turn import Turn


def _message(change: Change, entry: Entry, host: str) -> bytes:
    trailers = {"Michi-Txn": entry.txn, "Michi-Host": host}
    if entry.agent:
        trailers["Michi-Agent"] = entry.agent
    trailers.update(change.trailers)
    body = "\n".join(f"{k}: {_one_line(v)}" for k, v in trailers.items())
    return f"michi: {change.subject}\n\n{body}\n".encode()


def _same(tree: str | None, folder: Path) -> bool:
    """Whether an entry's work tree (its git dir) is `folder`."""
    return tree is not None and os.path.realpath(tree) == os.path.realpath(folder)


def _move_refused(refused: str) -> GitFailed:
    """An offline or remote-less command's refused checkout move, as its error (nothing was changed)."""
    from michi.git.checkout import NESTED

    if refused.startswith(NESTED):  # not the user's changes: a nested repository (ADR 0006)
        return GitFailed(
            f"the task branch was not changed: {refused.removeprefix(NESTED).split(';')[0]}",
            code="nested_repository",
            hint="move that repository out of this work tree, then retry",
        )
    return GitFailed(
        f"your work tree has changes in task files michi must change ({refused.splitlines()[0]})",
        hint="commit or stash them (task files should only change through michi), then retry",
    )


def _patient(on_wait: Callable[..., None] | None) -> Callable[..., None] | None:
    """`on_wait` for the wait for an answer that can no longer be withdrawn: its `Interrupted` (an MCP
    call cancelled, its server stopping) no longer ends that wait (ADR 0017)."""
    if on_wait is None:
        return None

    def report(*args: Any) -> None:
        with contextlib.suppress(Interrupted):
            on_wait(*args)

    return report


def _one_line(value: str) -> str:
    """A trailer value that cannot forge another trailer: control characters are shown escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(value))


# Changed paths above which the push sends a whole pack rather than a thin one (see `git.push`).
_THIN_UP_TO = 1000


def _commands(entries: list[Entry]) -> str:
    return ", ".join(f"`michi {e.command}`" for e in entries)


def _holds(lock: RepoLock) -> bool:
    try:
        lock.ensure_held()
    except LockError:
        return False
    return True


def _handed_over(exc: BaseException) -> GitFailed:
    """What a command says that lost the lock after it journaled its operation: the operation is the
    next holder's to finish (exactly once), so the command must not be run again (ADR 0004)."""
    why = exc.message if isinstance(exc, MichiError) else f"{type(exc).__name__}: {exc}"
    details = exc.details if isinstance(exc, LockError) else {}
    return GitFailed(
        f"{why}; this operation is in the journal, so the holder that took over the lock, or the next "
        "michi command, finishes it exactly once",
        code="push_unknown",
        hint="do not run this command again: run `michi sync`, which finishes it or reports it",
        **details,
    )


class _Refused(Exception):
    """The remote refused this run's push (another clone landed first) and nothing else rode on it: the
    lock is let go while waiting to try again, so it is held for one round at a time (ADR 0004)."""


# (tracking tip, tip fetched without the lock, path -> (entry in the one, entry in the other)).
_Moves = tuple[str, str, "git.Moves"]


class _Prebuilt(NamedTuple):
    """This run's operation applied without the lock on `start` (ADR 0015): its commit `tip`, what the
    apply returned, and the paths it changed. Used under the lock only when the round builds on `start`
    with nothing to apply before it; the journal and the push treat it as a commit made there."""

    start: str
    txn: str
    made: float  # `time.monotonic()` once built: what passed since then is time its clock lost
    tip: str
    ids: dict[str, Any]
    result: Any
    changed: dict[str, tuple[git.PathEntry, git.PathEntry]]


# A prebuilt commit older than this is applied again under the lock: its apply read the clock (a claim's
# lease, `modified`, the commit's dates) before the lock wait, which may last up to `lock_wait`.
_PREBUILT_FOR = 1.0

# Marks a refused push (its time); for this many seconds after one, commands fetch before the lock.
_CONTENDED = "contended"
_CONTENDED_FOR = 60.0


# Refused pushes a clone may still meet once it holds its turn (those already on their way when it took
# it, and pushes of clones that do not look at turns): past `push_retries` plus these, it gives up.
_TURN_ROUNDS = 16
# The longest one hold of the lock waits out other clones' turns, over all its rounds, before its rounds
# push into them anyway (and are refused until the turn ends or is judged stale).
_TURN_WAIT_LOCKED = 10.0


class Transaction:
    def __init__(self, req: TxnRequest) -> None:
        self.req = req
        self.host = hostname()
        self.started = time.monotonic()
        busy = git.operation_in_progress(req.repo.git_dir)
        if busy:
            raise RepoBusy(
                f"the repository is in the middle of {busy}; michi will not touch it",
                hint="finish or abort it (e.g. `git rebase --continue` / `git merge --abort`), then retry",
            )
        self.git: Repo = git.open_repo(req.repo.worktree)
        self.git.network_timeout = req.config.remote_timeout or None
        self.attributes = AttributeFiles(req.repo.worktree)
        self.target: Target = resolve(self.git, req.config, req.offline, changing=True)
        author = git.signature(self.git, "author")
        committer = git.signature(self.git, "committer")
        self.identity = (author.rsplit(b" ", 2)[0], committer.rsplit(b" ", 2)[0])
        self.notes: list[str] = []
        self.leftover: list[Entry] = []  # a dead holder's or offline entries, read under the lock
        self.report = recovery.Report()  # what became of them, in the application that counted
        self.already: set[str] = set()  # txns of leftover entries found on the remote already
        self.landed_at: dict[str, str] = {}  # those of them, each with the commit that carried it
        # What an offer must share with this run to join it; None: this run neither hands its operation to
        # the holder nor takes others' (ADR 0017). Made once, before the lock.
        self.group_target: dict[str, Any] | None = None
        # Push attempts so far, over every round under the lock: above 0 when a round starts, the one
        # before it was refused (`_Refused`), so the remote has moved and is fetched before applying.
        self.attempt = 0
        self.refusals = 0  # of those, the pushes the remote refused (another clone landed first)
        self.contended = False  # a push of this clone was refused lately (read before the lock)
        self.pause = 0.0  # the last backoff slept between two rounds (decorrelated jitter)
        self.turn: Turn | None = None  # this clone's turn on the remote, once it had to look (ADR 0004)
        self.prefetched: str | None = None  # the remote tip `_prefetch` saw, for the next round only
        self.prefetch_moves: _Moves | None = None  # (tracking tip then, `prefetched`, what differs)
        self.adopted: Entry | None = None  # our operation, taken by a holder that died or failed
        self.txn_id: str | None = None  # this run's one operation's txn, when chosen before the lock
        self.prebuilt: _Prebuilt | None = None  # its commit, built before the lock (ADR 0015)
        self.stranded: list[stranded.Stranded] = []  # sync only: michi commits no journal entry names
        self.rescued: set[str] = set()  # txns of those that this run completes (or found landed)
        self.pushed = False  # this run's push landed: its journal entry must survive a late failure
        self.keep_entry = False  # the push's outcome is unknown: the next run must check the remote
        # Others' operations set aside after the remote refused a push carrying them: this run's own go
        # alone, they stay in the journal as they were (pending ones) or for their waiters (handed ones).
        self.aside: list[Entry] = []
        # Landed entries whose index move another work tree must finish (`_update_local`): kept journaled.
        self.unmoved: list[Entry] = []
        # path -> (entry before, entry after) for every path the last application's commits changed, from
        # its start: moving the checkout by these needs no git process to diff or list two (possibly
        # 50,000-entry) trees (ADR 0015).
        self.changed: dict[str, tuple[git.PathEntry, git.PathEntry]] = {}
        self.known: git.Moves | None = (
            None  # `changed` (after the prefetch's moves, if it built on them), when it starts at local
        )
        head = git.head(self.git)
        if head.branch is None:
            self.notes.append(f"HEAD is detached; tasks were written to branch {self.target.branch}")
        elif head.branch != self.target.branch:
            self.notes.append(
                f"tasks live on branch {self.target.branch}; you are on {head.branch}, which michi left alone"
            )

    # -- building commits -----------------------------------------------------------------------------
    def _headers(self) -> list[bytes]:
        stamp = git.signature(self.git, "committer").rsplit(b" ", 2)[1:]
        tail = b" " + b" ".join(stamp)
        return [b"author " + self.identity[0] + tail, b"committer " + self.identity[1] + tail]

    def _commit(self, parent: str | None, change: Change, entry: Entry) -> str:
        with self.git.batched():  # its blobs, trees and commit: one pack when many (ADR 0015)
            return self._build(parent, change, entry)

    def _build(self, parent: str | None, change: Change, entry: Entry) -> str:
        paths = [safe_path(p) for p in change.writes]
        self.attributes.check([*paths, *change.links])
        oids = git.write_blobs(self.git, list(change.writes.values()))
        changes: dict[str, tuple[int, str] | None] = {
            p: (git.BLOB_MODE, oid) for p, oid in zip(paths, oids, strict=True)
        }
        changes.update({safe_path(p): (git.BLOB_MODE, oid) for p, oid in change.links.items()})
        changes.update({safe_path(p): None for p in change.deletes})
        base_tree = git.tree_of(self.git, parent) if parent else None
        seen: dict[str, git.PathEntry] = {}
        tree = git.edit_tree(self.git, base_tree, changes, seen=seen)
        for path, after in changes.items():
            self.changed[path] = (self.changed[path][0] if path in self.changed else seen[path], after)
        if base_tree is not None:  # the index brought to this tree needs no `diff-tree` (ADR 0015)
            git.remember_edit(self.git, base_tree, tree, changes, seen)
        return git.write_commit(
            self.git, tree, [parent] if parent else [], self._headers(), _message(change, entry, self.host)
        )

    def _apply_all(
        self,
        base: str | None,
        leftover: list[Entry],
        mine: list[Entry],
        handed: list[Entry] | None = None,
        changed: dict[str, tuple[git.PathEntry, git.PathEntry]] | None = None,
    ) -> tuple[str | None, list[Entry], dict[str, Any], dict[str, MichiError]]:
        """Apply each entry's mutation in order, each on the tree the previous one produced: (tip, the
        entries built, results and refusals by txn). A refusal leaves the others to go on: a leftover
        entry's is also reported and the entry dropped (the caller raises its own command's).
        `self.report` describes this application (the last one is the one that lands). `changed`: what
        commits before `base` in this application changed (a prebuilt one's), to which `self.changed` adds."""
        tip, built = base, []
        results: dict[str, Any] = {}
        errors: dict[str, MichiError] = {}
        report = recovery.Report()
        self.changed = changed if changed is not None else {}
        for entry in leftover + mine + (handed or []):
            ctx = ApplyContext(
                now=time.time(),
                agent=entry.agent,
                host=self.host,
                state_dir=str(self.req.repo.state_dir),
                renumbered={r["uuid"]: r["old"] for r in report.renumbered},
            )
            try:
                change = entry.mutation.resolve()(GitTaskTree(self.git, tip), entry.mutation.params, ctx)
                # A change the tree editor refuses (not michi's path) is that operation's refusal alone.
                built_tip = self._commit(tip, change, entry) if not change.empty else tip
            except MichiError as exc:
                if exc.code == "unknown_layout" or isinstance(exc, Interrupted):  # a newer michi's
                    raise  # repository (pending work stays for the michi that knows it, ADR 0006), or a
                    # signal: stop here, never record it as the operation's refusal (a pending one's dropped)
                errors[entry.txn] = exc
                if entry in leftover:
                    report.refuse(entry, exc.code, exc.message)
                continue
            tip = built_tip
            if entry in leftover:
                report.compare_ids(entry, dict(change.ids))
            kept = change.result if entry.handed else None  # the answer, should the holder die (ADR 0017)
            built.append(
                entry.but(commit=tip if not change.empty else None, ids=dict(change.ids), result=kept)
            )
            results[entry.txn] = change.result
        self.report = report
        return tip, built, results, errors

    def _pending(self, leftover: list[Entry], base: str | None) -> list[Entry]:
        """Leftover entries not yet in the local `base`: they still have to happen. In it is its commit,
        or another carrying its `Michi-Txn` (ADR 0004): the user may have rewritten the commit
        (`commit --amend`, `pull --rebase`), and applying the operation again would make it land twice."""
        pending = [
            e for e in leftover if not (e.commit and base and git.is_ancestor(self.git, e.commit, base))
        ]
        if pending and base:  # one `git log` in C, only for entries whose commit is not there
            found = recovery.landed(self.git, base, pending)
            pending = [e for e in pending if e.txn not in found]
        return pending

    def _not_landed(self, leftover: list[Entry], tip: str | None) -> list[Entry]:
        """Leftover entries whose `Michi-Txn` is not on the remote at `tip`, whatever commit carried it
        there (ADR 0004): only those may be applied again. Costs one git process, and only on recovery."""
        found = recovery.landed(self.git, tip, leftover)
        self.already, self.landed_at = set(found), found
        # Offline work landed by someone's `git push` with a provisional id another clone holds (ADR 0007):
        # its renumbering joins the caller's `leftover` in place, journaled, pushed and reported as pending.
        leftover.extend(recovery.renumberings(self.git, self.req.repo.state_dir, tip, leftover, found))
        return [e for e in leftover if e.txn not in found]

    # -- the transaction ------------------------------------------------------------------------------
    def run(self, mutations: list[Mutation], fetch: bool = False, rescue: bool = False) -> TxnOutcome:
        from michi.lock import Answered, RepoLock

        resume()  # a Ctrl-C held since this command's last change landed stops it here, before this one
        for m in mutations:
            m.resolve()  # import the apply functions before the lock (ADR 0002)
        guess = self.target.remote_ref if self.target.online else self.target.local_ref
        guessed = git.ref_oid(self.git, guess) if guess else None
        self.contended = self.target.online and self._contended()
        if self.contended and not (fetch or rescue):
            # Other clones push here often: queue for this clone's turn rather than race them (ADR 0004);
            # best effort (a held turn still refuses our push). Then the last-known tip is likely stale.
            with best_effort:
                turn = self._turn()
                turn.wait(want=True)
                if turn.waited:
                    self._touch(_CONTENDED)  # still contended: the next command queues too
            self._prefetch()
        git.warm_up(self.git, self.prefetched or guessed)
        cfg = self.req.config
        offer = None
        if (
            self.target.online
            and not (fetch or rescue or self.req.push_all)
            and len(mutations) == 1
            and group.eligible(mutations[0], cfg.group_commit)
        ):
            where = str(self.req.repo.git_dir)
            self.group_target = group.target_of(self.target.remote, self.target.branch, where, self.identity)
            entry = Entry(uuid4_hex(), mutations[0], self.req.command, self.req.agent, base=guessed)
            offer = group.Offer(self.req.repo.state_dir, entry, self.group_target)
        prebuild = self.target.online and not (fetch or rescue or self.req.push_all) and len(mutations) == 1
        if prebuild:
            self.txn_id = offer.entry.txn if offer is not None else uuid4_hex()
            self._prebuild(mutations[0])
        prepared = time.monotonic()
        holds: list[float] = []
        handover = offer
        left: str | None = None  # the lock was left in place at the last release (`RepoLock.left`)
        on_wait = self.req.on_wait
        try:
            outcome: TxnOutcome | None = None
            with offered(offer.taken) if offer is not None else contextlib.nullcontext():
                try:
                    while True:
                        lock = RepoLock(
                            self.req.repo,
                            ttl=cfg.lock_ttl,
                            command=self.req.command,
                            agent=self.req.agent,
                            on_wait=on_wait,
                            handover=handover,
                        )
                        try:
                            with lock.held(cfg.lock_wait):
                                locked = time.monotonic()
                                try:
                                    outcome = self._locked(lock, mutations, fetch, rescue, handover)
                                finally:
                                    released = time.monotonic()
                                    holds.append(released - locked)
                            break
                        except _Refused:
                            faults.point("refused")
                            handover = None  # settled in the first round; later rounds only take the lock
                            self._between_rounds()
                            self._prefetch()
                            if prebuild:
                                self._prebuild(mutations[0])
                        except (KeyboardInterrupt, Interrupted) as exc:
                            if not self._taken_meanwhile(offer, exc):
                                raise
                            on_wait = _patient(on_wait)  # and wait on, for the answer of the one that took it
                        finally:
                            lock.close()  # its guard file's descriptor: an MCP server runs many of these
                            left = lock.left
                            git.tidy()  # what the hold put off (a staged move's folder, ADR 0015)
                    locked = released - sum(holds)  # the wait: everything but the holds, backoff included
                except Answered:
                    locked = released = time.monotonic()
                except BaseException:
                    # An offer nobody took must not outlive us (a later holder would apply it after we
                    # failed).
                    if offer is not None and not offer.settled:
                        offer.withdraw()
                    raise
                if outcome is None:  # a holder did our operation (ADR 0017): its answer is ours
                    assert offer is not None
                    outcome = offer.outcome()
            if left is not None:
                outcome.notes.append(left)
        finally:
            if offer is not None:
                offer.close()
            if self.turn is not None:
                self.turn.give_back()  # held but not used by a push that landed: the command failed
        outcome.timings.update(
            prepare=prepared - self.started,
            lock_wait=locked - prepared,
            lock_hold=sum(holds),  # every round under the lock
            lock_hold_max=max(holds, default=0.0),  # the longest the lock was held at once
            total=time.monotonic() - self.started,
        )
        faults.point("done")
        return outcome

    @staticmethod
    def _taken_meanwhile(offer: group.Offer | None, exc: BaseException) -> bool:
        """Interrupted while it waited (Ctrl-C, SIGTERM, its MCP call cancelled): whether a holder took our
        offer before we could withdraw it. Then it lands anyway, and the command answers with its outcome,
        never "interrupted" (ADR 0017)."""
        if offer is None or offer.settled:
            return False
        faults.point("withdrawing")  # a holder may take the offer right here
        return not offer.withdraw()

    def _locked(
        self, lock: RepoLock, mutations: list[Mutation], fetch: bool, rescue: bool, offer: group.Offer | None
    ) -> TxnOutcome | None:
        """The transaction under the lock; None when a holder already answered our offer."""
        # First: an answered offer is done, whatever else might fail here (a retry would repeat it).
        settled = offer.settle() if offer is not None else group.FRESH
        if settled == group.ANSWERED:
            return None
        state_dir = self.req.repo.state_dir
        journal = Journal(state_dir)
        leftover = self.leftover = journal.load()
        if journal.damaged:
            self.notes.append(f"the journal could not be read and was kept as {journal.kept_as}")
        # A dead holder's push may still be running: it must be over before we decide what landed.
        waited = orphans.settle(journal.push) if leftover else None
        if waited:
            self.notes.append(waited)
        tracking = git.ref_oid(self.git, self.target.remote_ref) if self.target.remote_ref else None
        txn = offer.entry.txn if offer is not None else None
        tree = str(self.req.repo.git_dir)
        mine = [
            Entry(
                txn or self.txn_id or uuid4_hex(),
                m,
                self.req.command,
                self.req.agent,
                base=tracking,
                tree=tree,
            )
            for m in mutations
        ]
        if settled == group.TAKEN_STATE:
            assert offer is not None
            # Taken by a holder that gave no answer (it died or failed): the journal holds our operation
            # if that holder got as far as writing it, and then it may even have landed (see `_online`).
            own = next((e for e in leftover if e.txn == txn), None)
            if own is not None:
                leftover = [e for e in leftover if e is not own]
                mine = [own.but(handed=None, result=None)]
            else:  # look for it on the remote from where its waiter started: whoever took it built on
                mine = [mine[0].but(base=offer.entry.base)]  # that tip or a later one
            self.adopted = own or mine[0]
            # Its push may have landed: until the remote says, it must stay journaled (as `push_unknown`).
            self.keep_entry = own is not None and own.state == PUSHING
        # Under a script's lock (`michi lock run`) nothing of another command may happen: take no offers.
        target = None if lock.joined else self.group_target
        handed = group.take(state_dir, target, tracking) if target is not None else []
        lock.ensure_held()  # the journal is the holder's alone: one that took over owns it now
        try:
            # Inside the `try`: a Ctrl-C just after the save (or within it, after its rename) must take
            # this run's entry out again, or the next command lands what this one called not done.
            journal.save(leftover + mine + handed)
            faults.point("locked")
            if self.target.online:
                return self._online(lock, journal, leftover, mine, handed, fetch, rescue)
            return self._local_only(journal, leftover, mine)
        except BaseException as exc:
            if not _holds(lock):
                # Taken over midway (paused past the lease, `lock release --force`): the journal, which
                # holds this operation, is the new holder's now, and it or the next command finishes the
                # operation exactly once. Touch nothing, and say so: run again, it would happen twice.
                raise _handed_over(exc) from exc
            # A failed command is not pending work: forget its entry, unless its push landed (then the
            # next transaction sees that on the remote and only finishes the local update). The entries
            # it took stay: they are its waiters' (ADR 0017), who adopt them, or, if they are gone (told
            # their change lands anyway), the next holder completes them.
            if not self.pushed and not self.keep_entry:
                drop = {e.txn for e in mine}
                journal.save([e for e in journal.load() if e.txn not in drop])
            raise

    def _online(
        self,
        lock: RepoLock,
        journal: Journal,
        leftover: list[Entry],
        mine: list[Entry],
        handed: list[Entry],
        fetch: bool,
        rescue: bool,
    ) -> TxnOutcome:
        assert self.target.remote and self.target.remote_ref
        old_remote = git.ref_oid(self.git, self.target.remote_ref)
        base, fetched = old_remote, False
        known: Any = None  # our adopted operation's result, when a dead holder's push had landed it
        moves: _Moves | None = None  # the prefetch's, when this round builds on its tip
        landed_at: str | None = None  # and the commit that carried it there
        if self.adopted is not None:
            try:
                base, fetched = self._fetch(), True
            except MichiError as exc:
                if not self.keep_entry:
                    raise
                raise GitFailed(
                    f"a michi that took this operation over was killed while pushing it, and the remote "
                    f"cannot be asked whether it landed ({exc.message})",
                    code="push_unknown",
                    hint="do not repeat the command: the next michi command (e.g. `michi sync`) checks the "
                    "remote and finishes this operation exactly once",
                ) from None
            found = recovery.landed(self.git, base, mine)
            self.keep_entry = False
            if found:
                landed_at = found[self.adopted.txn]
                known = self._kept_result(self.adopted, landed_at)
                leftover, mine = leftover + mine, []
        elif not (fetch or leftover) and self.prefetched not in (None, base):
            # The remote tip fetched before this round, without the lock: built on as it is, the push
            # checks it (fast-forward only); a refusal is still decided on freshly fetched state.
            base, moves = self.prefetched, self.prefetch_moves
        elif fetch or leftover or base is None or self.attempt:
            base, fetched = self._fetch(), True
        self.prefetched = self.prefetch_moves = None  # a guess for one round only
        if rescue:
            local = git.ref_oid(self.git, self.target.local_ref)
            self.stranded = stranded.find(self.git, local, base, {e.txn for e in leftover})
            if self.stranded and local is not None and base is not None:
                # Those the remote had and lost (a force-push set it back) are not pushed again: the
                # local update leaves them out and says so (`update_local`).
                had = rewound.once_on_remote(self.git, self.target.remote_ref, base, local, old_remote)
                self.stranded = [c for c in self.stranded if c.oid not in had]
        retries = self.req.config.push_retries
        turn_budget = _TURN_WAIT_LOCKED  # for this whole hold, not for each of its rounds
        while True:
            if base is None:
                self._no_remote_branch()
            self.attempt += 1
            attempt = self.attempt
            self.known = None
            aside = {e.txn for e in self.aside}
            pending = [e for e in self._not_landed(leftover, base) if e.txn not in aside] if leftover else []
            if aside:
                handed = [e for e in handed if e.txn not in aside]
            start = self._rescue(base) if self.stranded else base
            pre, self.prebuilt = self.prebuilt, None  # a guess for one round only
            if pre is not None and self._use_prebuilt(pre, start, pending, mine):
                # Our operation applied before the lock on this very tip; the waiters' go on top.
                tip, built, results, errors = self._apply_all(pre.tip, [], [], handed, dict(pre.changed))
                built = [mine[0].but(commit=pre.tip, ids=dict(pre.ids)), *built]
                results[mine[0].txn] = pre.result
            else:
                tip, built, results, errors = self._apply_all(start, pending, mine, handed)
            if not fetched and any(e.txn in errors for e in mine + handed):
                base, fetched = self._fetch(), True  # refuse only on fresh state
                continue
            own_error = next((errors[e.txn] for e in mine if e.txn in errors), None)
            if own_error is not None and not handed and not any(e.txn not in errors for e in pending):
                # Refused on a state that holds pending operations (a holder taken over midway left its
                # claim journaled): those still land first, else the refusal named what never landed.
                raise own_error
            result = results.get(mine[-1].txn) if mine else known
            # Set-aside ones too: their offline commits leave the local branch (michi's own, the journal
            # keeps the operations), else the branch could not move onto what landed, and reads went stale.
            landed = {e.txn for e in leftover} | self.rescued
            if tip == base:
                unsent = self._answer(leftover, handed, built, results, errors, False, attempt, [])
                notes = self._update_local(old_remote, base, landed)
                journal.save(self._remaining(leftover + handed, unsent))
                if own_error is not None:
                    raise own_error
                # Our adopted operation, landed by the dead holder, was pushed as any other (ADR 0017).
                return self._outcome(
                    result,
                    landed_at,
                    pushed=landed_at is not None,
                    attempts=attempt,
                    notes=notes,
                    recovered=self._completed(),
                )
            assert tip is not None
            self.known = self._known(old_remote, start, moves)
            # Waiters a dead holder landed, not yet answered (`_answer` runs after our push): their
            # entries stay, with the commit and result that landed, so a holder after us can still answer
            # them should we die too (ADR 0017). Landed, they are never applied again.
            unanswered = [e for e in leftover if e.handed and e.txn in self.landed_at]
            entries = [e.but(state=PUSHING, commit=tip) for e in built] + unanswered + self.aside
            with interruptions_deferred(lambda: self.pushed), self.git.sessions_apart():
                naming = functools.partial(self._naming, journal, entries, lock)
                beside = functools.partial(self._beside, old_remote, start, tip)
                landed_now = set_aside = False
                try:
                    landed_now = self._push(tip, base, naming, beside)
                except RemoteRejected as exc:
                    set_aside = self._set_aside(exc, built, mine, leftover, handed)
                    if not set_aside:
                        raise
                finally:
                    if not landed_now:  # refused or failed: the move's processes and staging wait for nothing
                        git.drop_prepared(self.git)
                if landed_now:
                    lock.ensure_held()  # else the holder that took over finishes it (`_handed_over`)
                    self.pushed = True
                    faults.point("pushed")
                    ours = {e.txn for e in mine + handed}
                    notes = self._finish(old_remote, tip, landed | ours, lock)
                    unsent = self._answer(leftover, handed, built, results, errors, True, attempt, notes)
                    journal.save(self._remaining(entries, unsent))
                    self._touch_synced()
                    if own_error is not None:
                        raise own_error
                    return self._outcome(
                        result, tip, pushed=True, attempts=attempt, notes=notes, recovered=self._completed()
                    )
            if set_aside:
                continue  # the same tip, this run's own operations alone
            self._touch(_CONTENDED)
            self.refusals += 1
            if self.refusals >= retries + _TURN_ROUNDS:
                break
            if not (leftover or handed or self.adopted or self.stranded):
                # Only this run's own operations rode on the refused push: nothing landed and nobody
                # waits on it, so wait for the next try without the lock (`run` takes it again).
                raise _Refused
            # Still under the lock (others' operations ride on this push): back off, then wait out
            # another clone's turn (pushing into it is refused) for a bounded time per hold, never taking one:
            # a dead holder elsewhere must not keep this clone's waiters behind the lock for a minute.
            # A turn of this very clone is used at once: its taker waits for this lock (ADR 0004).
            self._back_off()
            if self.turn is not None and turn_budget > 0:
                waited_from = time.monotonic()
                with best_effort:
                    self.turn.wait(want=False, limit=turn_budget)
                turn_budget -= time.monotonic() - waited_from
            base, fetched = self._fetch(), True
        raise GitFailed(
            f"the remote kept moving: push rejected {self.refusals} times",
            code="push_retries_exhausted",
            hint="other clones are pushing heavily and nothing of this command landed: retry it",
        )

    def _prebuild(self, mutation: Mutation) -> None:
        """Without the lock: apply this run's operation on the tip its next round will likely build on
        (the one fetched without the lock, else the remote-tracking one) and write its commit, so that
        the round under the lock only checks that it builds on that tip and pushes (ADR 0015). Objects
        written for nothing are unreferenced (git's gc collects them); a refusal here is only a guess on
        possibly stale state: the round under the lock applies again and decides."""
        self.prebuilt = None
        assert self.txn_id is not None and self.target.remote_ref
        start = self.prefetched or git.ref_oid(self.git, self.target.remote_ref)
        if start is None:
            return
        entry = Entry(self.txn_id, mutation, self.req.command, self.req.agent, base=start)
        try:
            tip, built, results, errors = self._apply_all(start, [], [entry])
        except (MichiError, OSError):
            return  # only a guess: the round under the lock applies it and says what is wrong
        finally:
            changed, self.changed = self.changed, {}
        if errors or tip is None or tip == start or len(built) != 1:
            return
        # Measured from here, not from before the apply: an apply under the lock, as long, reads the
        # clock as early before its push; what must not count is the wait for the lock.
        made = time.monotonic()
        self.prebuilt = _Prebuilt(
            start, entry.txn, made, tip, dict(built[0].ids), results[entry.txn], changed
        )
        faults.point("prebuilt")

    def _use_prebuilt(
        self, pre: _Prebuilt, start: str | None, pending: list[Entry], mine: list[Entry]
    ) -> bool:
        """The prebuilt commit is this round's: built on `start` for this very operation, with nothing to
        apply before it (a dead holder's entries, stranded commits, an adopted operation rebuild all), and
        lately enough that the clock its apply read is still about now (not before a long lock wait)."""
        return (
            pre.start == start
            and time.monotonic() - pre.made <= _PREBUILT_FOR
            and not (pending or self.stranded or self.adopted)
            and [e.txn for e in mine] == [pre.txn]
        )

    def _turn(self) -> Turn:
        from michi.workflow.turn import Turn  # only under contention: its git module loads hashlib

        if self.turn is None:
            assert self.target.remote
            repo, remote, branch = self.req.repo, self.target.remote, self.target.branch
            self.turn = Turn(repo.worktree, repo.common_dir, remote, branch, self.req.agent)
        return self.turn

    def _back_off(self) -> None:
        from michi.workflow.turn import backoff

        self.pause = backoff(self.pause)
        time.sleep(self.pause)

    def _between_rounds(self) -> None:
        """After a refused push, before the next round builds: back off, or, after `push_retries`
        refusals, take this clone's turn on the remote (ADR 0004); either way wait out another clone's."""
        turn = self._turn()
        want = self.refusals >= self.req.config.push_retries
        if turn.mine is None and not (want and not turn.unavailable):
            self._back_off()
        turn.wait(want)

    @staticmethod
    def _naming(journal: Journal, entries: list[Entry], lock: RepoLock, pid: int) -> None:
        """The push process `pid` exists, held at its gate (`git.push`): the journal saves the entries as
        pushing, by that process, before it may start (a SIGKILLed michi's push is then always named, so
        the next holder waits for it, ADR 0004); if saving fails or the lock is lost, nothing is pushed."""
        faults.point("spawned")
        lock.ensure_held()  # a lock taken over meanwhile: its holder's journal is not ours to write
        journal.save(entries, orphans.describe(pid))
        faults.point("committed")
        lock.ensure_held()  # our token and fence are still the latest (ADR 0003): else push nothing
        faults.point("pushing")

    def _beside(
        self, old_remote: str | None, start: str | None, tip: str, _pid: int, status: Callable[[], int | None]
    ) -> None:
        """Beside the push: the checkout move's first check starts and the next command's tree diff is
        written down. Both are for a push that lands: once the push has ended otherwise (refused, as
        another clone landed first), what is left of them is not done, and the round goes on at once."""

        def failed() -> bool:
            return status() not in (None, 0)

        with best_effort:  # both only save work later: never fail the push
            self._check_ahead(old_remote, tip, failed)
            if start is not None and not failed():
                git.remember_delta(
                    self.git, git.tree_of(self.git, start), git.tree_of(self.git, tip), self.changed
                )

    def _check_ahead(self, old_remote: str | None, tip: str, failed: Callable[[], bool]) -> None:
        """The checkout move's first check, started to run beside the push when the move will start at
        `old_remote` with this run's own edits (its answer is used only if still provably true), and the
        move's `restore` and `update-ref`, waiting to be told to go (ADR 0016): after the push, the move
        pays no git start-up. Unfed (the push refused, the move refused), they change nothing; none is
        started once the push `failed`."""
        if failed() or old_remote is None or git.ref_oid(self.git, self.target.local_ref) != old_remote:
            return
        if self.known is not None and git.head(self.git).branch == self.target.branch:
            # Staging a copy of the whole index (ADR 0015) is work done on the bet that the push lands: not
            # where pushes are being refused (other clones landing first), where it was CPU wasted round
            # after round. A spliced one (only the moved entries written) costs little either way.
            spend = self.refusals == 0 and not self.contended
            git.check_ahead(self.git, old_remote, self.known, tip, spend=spend, stop=failed)
        if not failed():
            git.prepare_update_ref(self.git, self.target.local_ref, tip, old_remote, UPDATE_MESSAGE)

    def _set_aside(
        self,
        exc: RemoteRejected,
        built: list[Entry],
        mine: list[Entry],
        leftover: list[Entry],
        handed: list[Entry],
    ) -> bool:
        """The remote refused a push (its hooks, a policy) that carried others' operations with this run's:
        which one it refuses is not known, and an innocent command must not fail with it, nor every later
        command of the clone. This run's own go alone next (True); the others stay, pending ones in the
        journal (`michi sync` tries them again and says what the remote refuses), handed ones for their
        waiters to push themselves (ADR 0017). False when there is nothing to set aside: the refusal is
        this run's own (with pending operations named, when only they were pushed)."""
        own = {e.txn for e in mine}
        carried = {e.txn for e in built} - own
        if not carried or not mine or self.aside:
            others = [e for e in leftover if e.txn in carried]
            if others and not mine:
                exc.message += "; the push carried this clone's pending " + ", ".join(
                    f"`michi {e.command}`" for e in others
                )
            return False
        self.aside = [e for e in leftover + handed if e.txn in carried]
        # What became of each: a waiter's goes back to it, which pushes it alone and hears the remote's
        # answer itself (ADR 0017), so it is not pending; offline work or a dead holder's stays pending.
        fates = []
        if waiters := [e for e in self.aside if e.handed]:
            fates.append(
                f"the waiting commands' operations ({_commands(waiters)}) went back to them: each pushes "
                "its own alone and answers with the remote's verdict"
            )
        if pending := [e for e in self.aside if not e.handed]:
            fates.append(
                f"the pending operations ({_commands(pending)}) stay pending (`michi sync` tries them again)"
            )
        self.notes.append(
            f"the remote refused a push that also carried other operations ({exc.message}); this command's "
            f"own change was pushed alone: {'; '.join(fates)}"
        )
        return True

    def _kept_result(self, entry: Entry, landed: str) -> Any:
        """The result a dead holder kept for `entry`, if the commit that landed is the one it built."""
        if entry.state == PUSHING and entry.commit and git.is_ancestor(self.git, landed, entry.commit):
            return entry.result
        raise GitFailed(
            f"this operation landed (commit {landed[:12]}), made by a michi that was killed before it "
            "could say what it did",
            code="result_unknown",
            hint="do not repeat the command: it is done; `michi task log ID` or `git log` shows the change",
        )

    def _answer(
        self,
        leftover: list[Entry],
        handed: list[Entry],
        built: list[Entry],
        results: dict[str, Any],
        errors: dict[str, MichiError],
        pushed: bool,
        attempts: int,
        notes: list[str],
    ) -> set[str]:
        """Give each waiting process whose operation this run completed its own outcome (ADR 0017); the
        txns of those whose answer could not be written (a full disk, something in its place)."""
        commits = {e.txn: e.commit for e in built}
        state_dir = self.req.repo.state_dir
        unanswered: set[str] = set()
        for entry in [e for e in leftover if e.handed] + handed:
            assert entry.handed is not None
            commit, result = commits.get(entry.txn), results.get(entry.txn)
            error = errors.get(entry.txn)
            if entry.txn in self.landed_at:  # landed by the dead holder that took it
                commit = self.landed_at[entry.txn]
                try:
                    result = self._kept_result(entry, commit)
                except MichiError as exc:
                    error = exc
            elif error is None and entry.txn not in results:
                continue  # not applied in the application that landed (cannot happen; never guess)
            outcome = TxnOutcome(
                result=result,
                commit=commit if pushed or entry.txn in self.landed_at else None,
                pushed=pushed or entry.txn in self.landed_at,
                branch=self.target.branch,
                remote=self.target.remote,
                attempts=attempts,
                notes=self.notes + notes,
            )
            try:
                group.answer(state_dir, entry.handed, None if error else outcome, error)
            except OSError:
                # Our own change is done: its failure is the waiter's alone, which then finds its
                # operation in the journal, as after a holder that died (its entry stays there).
                unanswered.add(entry.txn)
        return unanswered

    def _completed(self) -> int:
        """Pending operations now on the remote: found there, or applied and pushed by this run."""
        aside = {e.txn for e in self.aside}
        done = [e for e in self.leftover if e.txn not in aside]
        return len(done) - len(self.report.refused) + len(self.rescued)

    def _remaining(self, entries: list[Entry], unsent: set[str]) -> list[Entry]:
        """What the journal keeps once a round ended: the entries not yet answered, the operations set
        aside after a refusal (pending, `_set_aside`), and the landed ones another work tree must finish
        moving (`_update_local`); each once."""
        kept = {e.txn for e in self.unmoved}
        return [e for e in entries if e.txn in unsent and e.txn not in kept] + self.aside + self.unmoved

    def _no_remote_branch(self) -> None:
        """The remote has no task branch, as fetched just now. michi starts one (a commit with no parent)
        only where the local branch has no commits either: over a local history (the remote's branch
        deleted by mistake, a new empty remote) that commit would become the remote's whole branch, its
        history and every earlier task gone from it, and `git pull --rebase` would rebase the work onto it."""
        if git.ref_oid(self.git, self.target.local_ref) is None:
            return
        remote, branch = self.target.remote, self.target.branch
        raise GitFailed(
            f"remote {remote!r} has no branch {branch!r}, but your local {branch} has commits: michi would "
            f"start the remote's {branch} anew without them; nothing was changed",
            code="remote_branch_missing",
            hint=f"push your branch first (`git push -u {remote} {branch}`; if the remote's branch was "
            "deleted by mistake, restore it from a clone that has it), then retry",
        )

    def _rescue(self, base: str | None) -> str | None:
        """`base` plus the stranded michi commits not on the remote yet, replayed as they are."""
        assert base is not None and self.target.remote  # stranded commits exist only ahead of a remote tip
        exclude = git.merge_base(self.git, self.stranded[-1].oid, base)
        found = recovery.find_txns(self.git, base, exclude, [c.txn for c in self.stranded])
        todo = [c for c in self.stranded if c.txn not in found]
        self.rescued = {c.txn for c in self.stranded}
        self.already |= set(found)
        return stranded.replay(self.git, todo, base, self.target.remote, self.target.branch) if todo else base

    def _push(self, tip: str, base: str | None, named: Callable[[int], None], beside: OnStart) -> bool:
        """True when `tip` (built on the remote tip `base`) is on the remote; False when the remote is no
        longer at `base`, moved on or set back (fetch and retry). `named`
        gets the push's pid before it may start (the journal names it, so the next holder can wait for an
        orphaned push), `beside` once it runs."""
        assert self.target.remote
        try:
            result = self._send(tip, base, named, beside)
        except RemoteUnreachable as exc:
            if not exc.connected:
                raise  # git never reached the remote: nothing landed, the caller may simply retry
            # The connection broke mid-push (or michi ended a push past `remote_timeout`): the remote may
            # have taken it. Ask it before answering. Not there yet is no answer: ending git's side of a
            # push does not stop the server's (git daemon, ssh, https), which may land it a moment later;
            # told "retry", the user made the change twice. The journal keeps it, and the next michi
            # command finishes it exactly once, whichever way it went.
            try:
                landed = self._landed(tip)
                why = "the remote has not taken it yet, but its side of the push may still be running"
            except GitFailed:
                landed, why = None, "the remote cannot be asked whether it landed"
            if landed:
                return True
            if landed is False and git.pushes_here(self.git, self.target.remote):
                raise  # its receiving side was git's child here, and ended with it: it never lands
            self.keep_entry = True
            raise GitFailed(
                f"the push broke off and {why} ({exc.message})",
                code="push_unknown",
                hint="do not repeat the command: the next michi command (e.g. `michi sync`) checks the "
                "remote and finishes this operation exactly once",
            ) from None
        return result.ok

    def _send(
        self, tip: str, base: str | None, named: Callable[[int], None], beside: OnStart
    ) -> git.PushResult:
        """The push itself. A clone that looks at turns (ADR 0004) pushes atomically with the deletion of
        the turn ref, leased on "absent" (a no-op when no turn is held; refused as stale while another
        clone's is) or on its own turn, which then ends with the push that lands."""
        assert self.target.remote
        thin = len(self.changed) < _THIN_UP_TO
        release = self.turn.release() if self.turn is not None else None
        push = functools.partial(
            git.push,
            self.git,
            self.target.remote,
            tip,
            self.target.branch,
            {},
            beside,
            thin,
            named=named,
            built_on=base,
        )
        try:
            result = push(release=release)
        except RemoteUnreachable:
            raise  # cut off mid-push, it may have landed: `_push` asks the remote, never pushes blind
        except LockError:
            raise  # lost while naming the push (`_naming`): nothing was pushed, and nothing may be
        except MichiError:
            if self.turn is None or release is None or release[1]:
                raise
            # A remote that refuses atomic pushes or michi's refs: push as before, with no turns. Pushing
            # the same commit again is harmless, should the first push have landed after all.
            self.turn.unavailable = True
            result = push()
        if result.ok and self.turn is not None:
            self.turn.landed()
        return result

    def _landed(self, tip: str) -> bool:
        fresh = self._fetch()
        return fresh is not None and git.is_ancestor(self.git, tip, fresh)

    def _finish(self, old_remote: str | None, tip: str, landed: set[str], lock: RepoLock) -> list[str]:
        """Everything after the push landed. It may fail only by saying so: the operation is done."""
        try:
            notes = self._update_local(old_remote, tip, landed)
            if self.req.push_all:
                notes += self._push_all(tip, lock)
        except Exception as exc:  # the push landed; a local hiccup must not be reported as failure
            notes = [
                f"the change reached the remote, but the local branch was not updated ({exc}); run michi sync"
            ]
        finally:
            git.drop_prepared(self.git)  # those the move did not use (it replayed, or it refused)
        return notes

    def _prefetch(self) -> None:
        """Without the lock: fetch what the remote gained into michi's own ref, so the next round under
        the lock builds on it instead of fetching (ADR 0004). The remote-tracking ref is left alone (only
        the lock's holder moves it); a failure only means the next round fetches. What changed from the
        tracking tip to the fetched one is read here too: the checkout move after the push then needs no
        diff of its own, and the next command's index refresh finds the hop (ADR 0015)."""
        assert self.target.remote and self.target.remote_ref
        tracking = git.ref_oid(self.git, self.target.remote_ref)
        self.prefetched = git.prefetch_branch(self.git, self.target.remote, self.target.branch)
        self.prefetch_moves = None
        if tracking is not None and self.prefetched not in (None, tracking):
            assert self.prefetched is not None
            with best_effort:  # only saves work later
                moves = git.diff_moves(self.git, tracking, self.prefetched)
                self.prefetch_moves = (tracking, self.prefetched, moves)
                old, new = git.tree_of(self.git, tracking), git.tree_of(self.git, self.prefetched)
                git.remember_delta(self.git, old, new, moves)
        faults.point("prefetched")

    def _known(self, old_remote: str | None, start: str | None, moves: _Moves | None) -> git.Moves | None:
        """Every path that differs from `old_remote` to the tip just built, with its entries in both, when
        this run knows them: its own edits from `start`, after the prefetch's from `old_remote`."""
        if start == old_remote:
            return self.changed
        if moves is None or (moves[0], moves[1]) != (old_remote, start):
            return None
        known = dict(moves[2])
        for path, (before, after) in self.changed.items():
            known[path] = (known[path][0] if path in known else before, after)
        return known

    def _fetch(self) -> str | None:
        assert self.target.remote
        tip = git.fetch_branch(self.git, self.target.remote, self.target.branch)
        self._touch_synced()
        faults.point("fetched")
        return tip

    def _local_only(self, journal: Journal, leftover: list[Entry], mine: list[Entry]) -> TxnOutcome:
        ref = self.target.local_ref
        local = git.ref_oid(self.git, ref)
        here = git.head(self.git).branch == self.target.branch
        if not here and (held := held_elsewhere(self.req.repo, self.target.branch)) is not None:
            checked_out = held == "checked out"
            harm = "leave that work tree's index behind" if checked_out else "leave the rebase unable to end"
            raise GitFailed(
                f"branch {self.target.branch} is {held} in another work tree; committing to it from here "
                f"would {harm}",
                hint="run michi in that work tree, or set `branch` in .michi.toml to another branch"
                if checked_out
                else "finish the rebase there (`git rebase --continue` or `--abort`), then retry",
            )
        tip, built, results, errors = self._apply_all(local, self._pending(leftover, local), mine)
        for entry in mine:
            if entry.txn in errors:
                raise errors[entry.txn]
        result = results.get(mine[-1].txn) if mine else None
        notes: list[str] = []
        # Earlier offline entries already on the local branch stay as they are; one applied again here (its
        # commit no longer there: `git reset` dropped it) is named once, as built now.
        rebuilt = {e.txn for e in built}
        earlier = [e for e in leftover if e.state == OFFLINE and e.txn not in rebuilt]
        # From the journal's first word on, a Ctrl-C or SIGTERM waits until the branch and the journal
        # agree (as a push does, ADR 0004): cut between them, the user's index kept michi's files staged,
        # or the commit stayed on the branch with its entry forgotten, and "run it again" made it twice.
        # Once the branch moved, the change is made: what comes is held until the command has answered.
        moved: list[bool] = []
        # Its git processes run in sessions of their own (as the push does): a terminal's Ctrl-C reaches
        # michi alone, never a `restore` or `update-ref` half-way.
        with interruptions_deferred(lambda: bool(moved)), self.git.sessions_apart():
            if tip != local and tip is not None:
                journal.save(earlier + [e.but(state=PUSHING) for e in built])
                faults.point("committed")
                if here:
                    interrupted = [e.commit for e in leftover if e.commit and e.state != OFFLINE]
                    refused = move_checkout(self.git, local, tip, interrupted, self.changed)
                    if refused is not None:
                        raise _move_refused(refused)
                    faults.point("local")
                try:
                    git.update_ref(self.git, ref, tip, local, "michi: commit task change")
                except GitFailed:
                    if here:  # the branch moved under us: the index goes back where it was
                        git.read_tree_update(self.git, tip, local or git.EMPTY_TREE)
                    raise
                moved.append(True)
            if self.target.offline:
                # Their `ids` are provisional: the sync reports any that another clone took meanwhile.
                journal.save(earlier + [e.but(state=OFFLINE) for e in built if e.commit])
                notes.append("offline: committed locally, nothing was pushed; `michi sync` pushes it later")
            else:
                journal.save([])
                notes.append(f"no remote {self.req.config.remote!r}: committed locally, nothing was pushed")
        changed = tip is not None and tip != local
        return self._outcome(result, tip if changed else None, pushed=False, attempts=1, notes=notes)

    def _update_local(self, old_remote: str | None, tip: str | None, landed: set[str]) -> list[str]:
        if tip is None:
            return []
        interrupted = [e.commit for e in self.leftover if e.commit]
        if interrupted and git.head(self.git).branch != self.target.branch:
            there = checked_out_in(self.req.repo, self.target.branch)
            if there is not None:
                # A michi killed after its push landed, in the work tree that has the branch checked out,
                # may have left that tree's index at its commit: only a command there can finish the
                # move, and it needs these entries to know where the index is (else michi's files stayed
                # staged in it for the user's next commit). Entries of other trees are done with.
                aside = {e.txn for e in self.aside}
                self.unmoved = [
                    e.but(handed=None)
                    for e in self.leftover
                    if e.commit and e.txn in self.landed_at and e.txn not in aside and _same(e.tree, there)
                ]
        known = self.known if tip != old_remote else None
        return update_local(self.git, self.req.repo, self.target, old_remote, tip, landed, interrupted, known)

    def _push_all(self, tip: str, lock: RepoLock) -> list[str]:
        local = git.ref_oid(self.git, self.target.local_ref)
        if local is None or local == tip:
            return []
        assert self.target.remote
        if not git.is_ancestor(self.git, tip, local):  # the branch was left as it was: never set back
            return [
                "--push-all: your local branch does not hold what just landed; your commits were not pushed"
            ]
        lock.ensure_held()
        res = git.push(self.git, self.target.remote, local, self.target.branch, {}, built_on=tip, verify=True)
        return [] if res.ok else ["--push-all: the remote moved on; your own commits were not pushed"]

    def _touch_synced(self) -> None:
        self._touch("synced")

    def _touch(self, name: str) -> None:
        touch_marker(self.req.repo.state_dir, name)  # never through a link there

    def _contended(self) -> bool:
        """Was a push from this clone refused lately (another clone landed first)? Then the next command
        fetches before it takes the lock rather than spend a round under it on a stale tip."""
        try:
            refused = marker_time(self.req.repo.state_dir, _CONTENDED)
        except OSError:
            return False
        return refused is not None and time.time() - refused < _CONTENDED_FOR

    def _outcome(self, result: Any, commit: str | None, **kw: Any) -> TxnOutcome:
        notes = self.notes + self.report.notes() + kw.pop("notes", [])
        if self.rescued:
            notes.append(
                f"{len(self.rescued)} michi commit(s) that no journal entry named were only on your local "
                f"branch; they are on {self.target.remote} now"
            )
        return TxnOutcome(
            result=result,
            commit=commit,
            branch=self.target.branch,
            remote=self.target.remote,
            notes=notes,
            landed_before=len(self.already),
            refused=self.report.refused,
            renumbered=self.report.renumbered,
            **kw,
        )


def run_transaction(req: TxnRequest, mutation: Mutation) -> TxnOutcome:
    return Transaction(req).run([mutation])


def sync(req: TxnRequest) -> TxnOutcome:
    """Fetch, push pending offline (or interrupted) work, and bring the local task branch up to date."""
    return Transaction(req).run([], fetch=True, rescue=True)
