"""What one invocation knows before it does anything: where it runs, who it is, how to talk back."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from michi import config as config_mod
from michi.git import environ
from michi.plain import Plain
from michi.repo import RepoPaths, check_state_dir, check_told_places, find_repo


class Session(Plain):
    __slots__ = ("__dict__", "agent", "argv", "cwd", "json", "on_wait", "overrides")  # dict: cached_property

    def __init__(
        self,
        cwd: Path | None = None,
        json: bool = False,
        agent: str | None = None,
        overrides: dict[str, Any] | None = None,
        argv: list[str] | None = None,
        on_wait: Callable[[Any, float], None] | None = None,
    ) -> None:
        self.cwd = Path.cwd() if cwd is None else cwd
        # A caller's relative GIT_DIR and the like are read from the folder the command acts in (`-C`),
        # as `git -C` reads them (`michi.git.plain.child_env`).
        environ.acting_in = str(self.cwd)
        self.json, self.agent = json, agent
        self.overrides = {} if overrides is None else overrides
        self.argv = [] if argv is None else argv
        # Called while a changing command waits for the repo lock (holder, seconds waited): a spinner for a
        # person, progress notifications for an MCP client.
        self.on_wait = on_wait

    @cached_property
    def repo(self) -> RepoPaths:
        return check_state_dir(check_told_places(find_repo(self.cwd), self.cwd))

    @cached_property
    def config(self) -> config_mod.Config:
        return config_mod.load(self.repo.config_file, **self.overrides)

    def with_overrides(self, **flags: Any) -> config_mod.Config:
        """The config with this command's own flags on top (a None flag does not override)."""
        given = {k: v for k, v in flags.items() if v is not None}
        if not given:
            return self.config
        return config_mod.load(self.repo.config_file, **{**self.overrides, **given})

    @property
    def interactive(self) -> bool:
        """Spinners and colour only for a person at a terminal, never for agents or in --json mode."""
        return not self.json and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"

    @property
    def command_line(self) -> str:
        """What this process is doing, for lock owner records and commit messages."""
        return " ".join(a for a in self.argv if a != "--json") or "michi"

    def resolve_agent(self) -> str | None:
        """`--agent`, else `MICHI_AGENT`; validated, because it is written into commit trailers."""
        from michi.agent import check_agent

        if self.agent:
            return check_agent(self.agent, "--agent")
        env = os.environ.get("MICHI_AGENT")
        return check_agent(env, "MICHI_AGENT") if env else None
