"""`michi hook install | uninstall | run | push-check`: one verb each, returning data (the CLI renders)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from michi.hook import install as hook_install
from michi.results import Result
from michi.session import Session


@dataclass(frozen=True)
class HookChecked(Result):
    """`michi hook run` through the full CLI (git itself uses the fast path in `michi.hook.run`)."""

    allowed: bool
    warnings: list[str]

    def summary(self) -> str:
        lines = [f"warning: {w}" for w in self.warnings]
        return "\n".join([*lines, "the commit may go ahead"])


@dataclass(frozen=True)
class PushChecked(Result):
    """`michi hook push-check` through the full CLI (the pre-push script uses `michi.hook.prepush`)."""

    allowed: bool

    def summary(self) -> str:
        return "the push may go ahead"


def install(session: Session) -> hook_install.HookInstalled:
    return hook_install.install(session.repo)


def uninstall(session: Session) -> hook_install.HookUninstalled:
    return hook_install.uninstall(session.repo)


def run(session: Session) -> HookChecked:
    from michi.hook.check import check

    return HookChecked(allowed=True, warnings=check(session.repo))


def push_check(session: Session, remote: str | None, lines: list[str]) -> PushChecked:
    """Refuses (`offline_unsynced`) a push whose ref `lines` carry michi's unsynced offline commits."""
    from michi.hook import messages, prepush

    repo = session.repo
    txns = prepush.pending(str(repo.common_dir), os.environ)
    found = prepush.carried(txns, lines, remote, str(repo.worktree)) if txns else []
    if found:
        raise messages.unsynced_push(len(found))
    return PushChecked(allowed=True)
