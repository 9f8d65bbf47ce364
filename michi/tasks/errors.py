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


class IdsExhausted(Conflict):
    """The highest id in use or the counter is at 999,999,999, the last id there is: ids are never reused
    (ADR 0007), so no task can be added. Only a hand edit or an import gets there; it was `corrupt_task`,
    though no file is corrupt."""

    code = "ids_exhausted"


class MigrateClash(Conflict):
    """`michi migrate`: a task's file exists in both layouts, and moving one would overwrite the other."""

    code = "migrate_clash"
