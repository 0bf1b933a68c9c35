"""CLI commands (filled in by the area that owns them)."""

import typer


def register(app: typer.Typer) -> None:
    pass
