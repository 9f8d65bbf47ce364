"""Options shared by many commands, declared once so their help text is the same everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

from michi.session import Session

Wait = Annotated[
    float | None,
    typer.Option(
        "--wait",
        min=0,
        metavar="SECONDS",
        help="How long to wait for the repo lock (default 30, env MICHI_LOCK_WAIT; 0 = one try). "
        "Exit 75 when it runs out.",
    ),
]


def session(ctx: typer.Context) -> Session:
    obj = ctx.find_root().obj
    assert isinstance(obj, Session)
    return obj
