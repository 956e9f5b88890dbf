"""Bundled plugin web: ``archiver serve``, a local web UI to search, browse and replay archives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.api import hookimpl

if TYPE_CHECKING:
    from collections.abc import Iterable

    import click
    from aiohttp import web


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .commands import add_commands

    add_commands(cli)


@hookimpl
def register_routes() -> Iterable[web.AbstractRouteDef]:
    from aiohttp import web

    from .searching import search_page

    return [web.get("/", search_page), web.get("/search", search_page)]
