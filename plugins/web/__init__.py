"""Bundled plugin web: ``archiver serve``, a local web UI to search, browse and replay archives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.api import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .commands import add_commands

    add_commands(cli)
