"""``/qa``: what ``archiver qa`` found, per page (scores, missing resources, capture and replay
screenshots side by side); ``/qa/shot``: one of those screenshots."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from archiver.api import ArchiveError

from ..replay.templating import LIBRARY, render
from .results import latest_results, read_runs, screenshot_path

MAX_SHOT_BYTES = 32 * 1024 * 1024


def _archive_results(folder: Any) -> dict[str, Any]:
    runs = read_runs(folder)
    pages = sorted(latest_results(folder).values(), key=lambda page: page.badness)
    return {"runs": runs, "last": runs[-1] if runs else None, "pages": pages}


async def qa_page(request: web.Request) -> web.Response:
    library = request.app[LIBRARY]
    archives = []
    for handle in library.handles:
        found = await asyncio.to_thread(_archive_results, handle.folder)
        archives.append({"name": handle.name, **found})
    return render(request, "qa.html", section="qa", results=archives)


async def qa_shot(request: web.Request) -> web.Response:
    """A screenshot of the QA results: ``which=replay`` (kept by QA) or ``which=capture`` (the WARC's)."""
    library = request.app[LIBRARY]
    handle = library.by_name.get(request.query.get("archive", ""))
    if handle is None:
        raise web.HTTPNotFound(text="no such archive")
    if request.query.get("which") == "replay":
        path = screenshot_path(handle.folder, request.query.get("name", ""))
        if path is None:
            raise web.HTTPNotFound(text="no such screenshot")
        data = await asyncio.to_thread(path.read_bytes)
    else:
        url, timestamp = request.query.get("url", ""), request.query.get("ts", "")
        data = await asyncio.to_thread(_capture_shot, handle, url, timestamp)
    return web.Response(body=data, content_type="image/png", headers={"Cache-Control": "no-cache"})


def _capture_shot(handle: Any, url: str, timestamp: str) -> bytes:
    reader = handle.reader()
    if reader is not None:
        with contextlib.suppress(ArchiveError):
            found = reader.lookup(f"urn:screenshot:{url}", timestamp or None)
            if found is not None:
                data: bytes = reader.read(found).content(MAX_SHOT_BYTES)
                return data
    raise web.HTTPNotFound(text="no screenshot of this page in the archive")
