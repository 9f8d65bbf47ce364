"""`michi init`: the root `.tasks/` domain (with the id counter) and a commented `.michi.toml`, committed
through the transaction so they reach the remote; `--hook` also installs the pre-commit hook, `--agents`
writes michi's section into AGENTS.md."""

from __future__ import annotations

from typing import Any

from michi.commands import task_common
from michi.results import Message
from michi.session import Session
from michi.tasks import domains
from michi.tasks.errors import BadDomain


def run(session: Session, *, hook: bool, wait: float | None, offline: bool, agents: bool = False) -> Message:
    from michi.git.objects import NotMichisPath
    from michi.workflow import Mutation

    if agents:  # refused before the init lands, not after: exit 2 must mean nothing was done
        from michi.commands import agents_md

        agents_md.target(session.repo.worktree)
    root = session.repo.worktree
    domains.resolve(root, root, None)  # a symlink named .tasks is refused as every command refuses it
    try:
        outcome = task_common.transact(session, Mutation("michi.tasks.create:init", {}), wait, offline)
    except NotMichisPath as exc:
        if exc.details.get("path") != ".tasks":
            raise
        # The root's `.tasks` is a file, symlink or submodule on the task branch: `bad_domain`, as every
        # command says of it (README), not the tree editor's word for any other path in the way.
        raise BadDomain(
            ".tasks is a file, symlink or submodule on the task branch, not a folder of michi's",
            hint="michi keeps tasks only in a real .tasks/ folder: move it away (git mv), commit and push, "
            "then run 'michi init' again",
            path=".tasks",
        ) from None
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
