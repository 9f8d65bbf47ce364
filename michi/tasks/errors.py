"""The task errors agents match on by `code`; each carries the exit code of its family."""

from __future__ import annotations

from michi.errors import Conflict, NotFound, UsageError


class TaskNotFound(NotFound):
    code = "task_not_found"


class NoReadyTask(NotFound):
    code = "no_ready_task"


class AmbiguousId(UsageError):
    code = "ambiguous_id"


class BadDomain(UsageError):
    code = "bad_domain"


class TaskTooLarge(UsageError):
    """A change would make a task file larger than a task file may be (ADR 0006)."""

    code = "task_too_large"


class DependencyCycle(UsageError):
    """A dependency that would make tasks wait on each other for ever (Taskwarrior refuses it too)."""

    code = "dependency_cycle"


class AgentRequired(UsageError):
    code = "agent_required"


class InvalidTransition(Conflict):
    code = "invalid_transition"


class VersionMismatch(Conflict):
    code = "version_mismatch"


class Claimed(Conflict):
    code = "claimed"


class NotClaimOwner(Conflict):
    code = "not_claim_owner"


class CorruptTask(Conflict):
    """A task file that is not JSON, has conflict markers or lacks fields: reported, never overwritten."""

    code = "corrupt_task"


class MigrateClash(Conflict):
    """`michi migrate`: a task's file exists in both layouts, and moving one would overwrite the other."""

    code = "migrate_clash"
