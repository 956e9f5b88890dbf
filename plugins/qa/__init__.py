"""Bundled plugin qa: ``archiver qa ARCHIVE`` replays archived pages in headless Chromium and
reports, page by page, what the replay lacks (docs/qa.md).

Needs what the browser capture needs (Playwright and Debian's ``chromium``) and replays
through the replay library's application, in this process; its report is a page of
``archiver serve`` (``/qa``, through the ``register_routes`` hook).  Its results live in
``ARCHIVE/qa/``; ``archiver status`` says when QA last ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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
def archive_status(archive: Any) -> Iterable[tuple[str, Any]] | None:
    from .results import status_lines

    return status_lines(Path(archive))


@hookimpl
def register_routes() -> Iterable[web.AbstractRouteDef]:
    from aiohttp import web

    from .pages import qa_page, qa_shot

    return [web.get("/qa", qa_page), web.get("/qa/shot", qa_shot)]
