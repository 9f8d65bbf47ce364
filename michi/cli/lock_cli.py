"""`michi lock ...` verbs (placeholder until the lock issue lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's verbs to the application."""
