"""`michi status`, `michi watch`, `michi stats`: seeing the swarm (ADR 0013). Command modules and views are
imported inside each verb (ADR 0002)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from michi.cli.options import Fetch, at_most_ten_years, session
from michi.session import Session


def _limit(name: str, help_text: str) -> Any:
    return typer.Option(name, min=0.0, metavar="SECONDS", help=help_text)


def status(
    ctx: typer.Context,
    fetch: Fetch = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Health check for cron/CI: exit 0 when healthy, else the sum of the problems' codes "
            "(8 lock held too long, 16 expired claim, 32 offline work not pushed, 64 corrupt task file or "
            "tasks only a person can mend, 128 --reap failed); one line per problem.",
        ),
    ] = False,
    max_lock_age: Annotated[
        float | None,
        _limit("--max-lock-age", "With --check: a lock held longer is a problem (default lock_ttl)."),
    ] = None,
    max_claim_overdue: Annotated[
        float, _limit("--max-claim-overdue", "With --check: how long an expired claim may wait to be reaped.")
    ] = 0.0,
    max_unsynced: Annotated[
        float, _limit("--max-unsynced", "With --check: how long offline work may wait to be pushed.")
    ] = 0.0,
    reap: Annotated[
        bool, typer.Option("--reap", help="With --check: release expired claims first (dead-agent cleanup).")
    ] = False,
) -> Any:
    """The swarm at a glance: the repo lock, every claim, tasks by state, sync and offline work.

    No lock, and no network unless --fetch (as of the last sync). With --check, a health check whose
    exit status names the problems (see README, "Seeing the swarm").
    """
    return run_status(
        session(ctx),
        fetch=fetch,
        check=check,
        max_lock_age=max_lock_age,
        max_claim_overdue=max_claim_overdue,
        max_unsynced=max_unsynced,
        reap=reap,
    )


def watch(
    ctx: typer.Context,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=0.2,
            metavar="SECONDS",
            callback=at_most_ten_years,  # 1e10 or inf ended the watch in time.sleep, exit 1
            help="Seconds between refreshes.",
        ),
    ] = 2.0,
    fetch: Annotated[bool, typer.Option("--fetch", help="Fetch the task branch at every refresh.")] = False,
    activity: Annotated[
        int, typer.Option("--activity", min=0, metavar="N", help="How many recent michi commits to show.")
    ] = 10,
) -> Any:
    """The status kept live, with recent activity from git (who did what). Ctrl-C leaves (exit 0)."""
    from michi.cli import watch as watch_mod

    return watch_mod.run(session(ctx), interval=interval, fetch=fetch, activity=activity)


def stats(
    ctx: typer.Context,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="From this date (2025-01-31, ISO time, or 7d, 12h)."),
    ] = None,
    fetch: Fetch = False,
) -> Any:
    """Per agent: claims, completions, expired or released claims, claim-to-done median and p90; per day:
    tasks opened and closed; this clone's lock figures. From the task branch's git history.

    --agent NAME (the global option) shows that agent's figures only; MICHI_AGENT does not filter.
    """
    from michi.cli import status_views
    from michi.commands import stats as stats_cmd

    s = session(ctx)
    status_views.register(s.json)
    return status_views.done(stats_cmd.run(s, since=since, agent=s.agent, fetch=fetch))


def run_status(
    s: Session,
    *,
    fetch: bool,
    check: bool,
    max_lock_age: float | None,
    max_claim_overdue: float,
    max_unsynced: float,
    reap: bool,
) -> Any:
    """What `michi status` does: the view, or with `check` the health check."""
    from michi.cli import status_views
    from michi.errors import UsageError

    if reap and not check:
        raise UsageError("--reap works with --check", hint="run 'michi status --check --reap'")
    status_views.register(s.json)
    if not check:
        from michi.commands import status

        return status_views.done(status.collect(s, fetch=fetch))
    from michi.commands import status_check

    limits = status_check.Limits(
        max_lock_age=s.config.lock_ttl if max_lock_age is None else max_lock_age,
        max_claim_overdue=max_claim_overdue,
        max_unsynced=max_unsynced,
    )
    return status_views.done(status_check.check(s, limits, fetch=fetch, reap=reap))


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
    app.command("status")(status)
    app.command("watch")(watch)
    app.command("stats")(stats)
