"""Options shared by many commands, declared once so their help text is the same everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

from michi.session import Session


def at_most_ten_years(value: float | None) -> float | None:
    """A seconds flag (`--wait`, `watch --interval`) past ten years is that flag's usage error (`--wait` was
    `bad_config`, as if .michi.toml held it)."""
    from michi.config import MAX_TTL
    from michi.durations import as_given

    if value is not None and value > MAX_TTL:
        raise typer.BadParameter(f"{as_given(value)} is more than ten years: pass at most {MAX_TTL} seconds")
    return value


Wait = Annotated[
    float | None,
    typer.Option(
        "--wait",
        min=0,
        metavar="SECONDS",
        callback=at_most_ten_years,
        help="How long to wait for the repo lock (default 30, env MICHI_LOCK_WAIT; 0 = one try). "
        "Exit 75 when it runs out.",
    ),
]


def session(ctx: typer.Context) -> Session:
    obj = ctx.find_root().obj
    assert isinstance(obj, Session)
    return obj


Offline = Annotated[
    bool, typer.Option("--offline", help="Commit locally only; 'michi sync' pushes it later.")
]
IfVersion = Annotated[
    int | None,
    typer.Option("--if-version", metavar="N", help="Refuse (exit 4) if the task changed since version N."),
]
Fetch = Annotated[
    bool,
    typer.Option(
        "--fetch",
        help="Fetch the task branch before answering (list, show and log also do when the last sync "
        "is older than read_max_age, 60 s).",
    ),
]
NoFetch = Annotated[bool, typer.Option("--no-fetch", help="Answer from the last sync; never fetch.")]
Domain = Annotated[
    str | None,
    typer.Option(
        "--domain", metavar="PATH", help="The domain (default: nearest folder with .tasks/, else root)."
    ),
]
Every = Annotated[bool, typer.Option("--all", help="Every domain, not only the current one.")]
Ttl = Annotated[
    float | None,
    typer.Option(
        "--ttl", min=0, metavar="SECONDS", help="Claim length (default claim_ttl, 1 h; 0 = no expiry)."
    ),
]
Ref = Annotated[str, typer.Argument(metavar="ID", help="A task id, uuid or unique uuid prefix.")]
