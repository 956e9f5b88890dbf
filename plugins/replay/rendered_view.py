"""What the browser capture stored of a page: its rendered DOM and its screenshot.

A `--browser` crawl stores both as resource records (``urn:dom:URL``, ``urn:screenshot:URL``)
beside the page's response.  The captures page of a URL lists them; here they are opened:
the screenshot as the PNG it is, the DOM as a static page (its scripts removed: they built
it already, and run again they would rebuild it from requests made at replay time) with
its links rewritten into the archive like a replayed page's.  Neither runs a script.
"""

from __future__ import annotations

import asyncio
import html

from aiohttp import web

from ..markup.snapshot import static_snapshot
from .renderings import KINDS, LABELS
from .replay import UrlRewriter, rewrite_html
from .replay_view import INERT_CSP, MAX_REWRITE
from .target import parse_target
from .templating import LIBRARY


def _banner(url: str, timestamp: str) -> str:
    when = f"{timestamp[0:4]}-{timestamp[4:6]}-{timestamp[6:8]} {timestamp[8:10]}:{timestamp[10:12]}"
    history = "/history?url=" + html.escape(url, quote=True)
    return (
        '<div id="archiver-banner" role="banner" style="all:initial;display:block;box-sizing:border-box;'
        "width:100%;padding:5px 12px;background:#1f2933;color:#e4e7eb;font:13px/1.4 system-ui,sans-serif;"
        'border-bottom:2px solid #f0b429">'
        f"Rendered by the browser at {when} UTC, scripts removed: {html.escape(url)} · "
        f'<a href="{history}" style="all:unset;cursor:pointer;color:#9fb3c8;text-decoration:underline">'
        "all captures</a></div>"
    )


async def rendered_record(request: web.Request) -> web.Response:
    """``/rendered/dom|screenshot/TIMESTAMP/URL``: the browser capture's record nearest TIMESTAMP."""
    kind = request.match_info["kind"]
    if kind not in KINDS:
        raise web.HTTPNotFound(
            reason="No such record", text="expected /rendered/dom/... or /rendered/screenshot/..."
        )
    target = parse_target(request, f"/rendered/{kind}/")
    library = request.app[LIBRARY]
    found = await asyncio.to_thread(library.nearest, KINDS[kind] + target.url, target.timestamp, fuzzy=False)
    if found is None:
        raise web.HTTPNotFound(reason="Not rendered", text=f"no {LABELS[kind]} of this URL in the archive")
    stored = await asyncio.to_thread(found.archive.read, found.capture)
    headers = {"Content-Security-Policy": INERT_CSP, "Cache-Control": "no-cache"}
    if kind == "screenshot":
        return web.Response(body=stored.payload, content_type="image/png", headers=headers)

    def page() -> bytes:
        text = static_snapshot(stored.content(MAX_REWRITE).decode("utf-8", "replace"))
        urls = UrlRewriter(target.url, found.capture.timestamp, is_archived=library.is_archived)
        return rewrite_html(text, urls, _banner(target.url, found.capture.timestamp)).encode("utf-8")

    body = await asyncio.to_thread(page)
    return web.Response(body=body, content_type="text/html", charset="utf-8", headers=headers)
