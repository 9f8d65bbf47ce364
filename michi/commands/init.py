"""`michi init`: the root `.tasks/` domain (with the id counter) and a commented `.michi.toml`, committed
through the transaction so they reach the remote; `--hook` also installs the pre-commit hook, `--agents`
writes michi's section into AGENTS.md."""

from __future__ import annotations

from typing import Any

from michi.commands import task_common
from michi.results import Message
from michi.session import Session


def run(session: Session, *, hook: bool, wait: float | None, offline: bool, agents: bool = False) -> Message:
    from michi.workflow import Mutation

    if agents:  # refused before the init lands, not after: exit 2 must mean nothing was done
        from michi.commands import agents_md

        agents_md.target(session.repo.worktree)
    outcome = task_common.transact(session, Mutation("michi.tasks.create:init", {}), wait, offline)
    created: list[str] = list(outcome.result or [])
    data: dict[str, Any] = {"created": created, "transaction": task_common.txn_info(outcome), "hook": None}
    text = f"initialised michi: created {', '.join(created)}" if created else "michi was already initialised"
    if hook:
        from michi.hook.install import install  # built by the hook issue; imported only when asked

        installed = install(session.repo)
        data["hook"] = installed.to_json()
        text += "\n" + installed.summary()
    if agents:
        from michi.commands import agents_md

        path, what = agents_md.write(session.repo.worktree)
        data["agents_md"] = {"path": str(path), "section": what}
        text += f"\n{path.name}: michi section {what} (commit it with your next commit)"
    if outcome.commit and not outcome.pushed:
        text += " (committed locally, nothing pushed: 'michi sync' pushes it later)"
    text += "".join(f"\nnote: {note}" for note in outcome.notes if "nothing was pushed" not in note)
    return Message(text, data)
