"""ReplayWeb.page in a test: a local server hosting its embed, its ui.js and sw.js, and one WACZ.

The embed page holds `<replay-web-page>`; the package's `ui.js` and `sw.js` are served under
/replay/ (where the embed registers its service worker), and the WACZ under /site.wacz, which
the service worker reads by HTTP range requests.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from interop_site import REPLAYWEB_DIR

WAIT_MS = 30_000
FIND_FRAME = """(url) => {
          const find = (root) => {
            for (const frame of root.querySelectorAll('iframe')) {
              try {
                if (frame.contentWindow.location.href.endsWith('mp_/' + url)) return true;
                if (frame.contentDocument && find(frame.contentDocument)) return true;
              } catch (e) {}
            }
            for (const el of root.querySelectorAll('*')) {
              if (el.shadowRoot && find(el.shadowRoot)) return true;
            }
            return false;
          };
          return find(document);
        }"""
"""True once a frame, however deep in the embed's frames and shadow roots, shows `url`."""


@asynccontextmanager
async def serve_replayweb(wacz: Path) -> AsyncIterator[str]:
    """Base URL of a server hosting the embed page (`/?url=URL`), ReplayWeb.page and `wacz`."""

    async def embed(request: web.Request) -> web.Response:
        url = html.escape(request.query["url"])
        body = f"""<!doctype html><html><head><meta charset="utf-8">
<script src="/replay/ui.js"></script></head>
<body><replay-web-page source="/site.wacz" url="{url}" replayBase="/replay/" embed="replayonly"
 style="display: block; width: 1000px; height: 700px"></replay-web-page></body></html>"""
        return web.Response(text=body, content_type="text/html")

    async def replay_file(request: web.Request) -> web.FileResponse:
        name = request.match_info["name"]
        if name not in ("ui.js", "sw.js"):
            raise web.HTTPNotFound()
        return web.FileResponse(REPLAYWEB_DIR / name, headers={"Content-Type": "application/javascript"})

    async def archive(request: web.Request) -> web.FileResponse:
        return web.FileResponse(wacz, headers={"Content-Type": "application/wacz+zip"})

    app = web.Application()
    app.router.add_get("/", embed)
    app.router.add_get("/replay/{name}", replay_file)
    app.router.add_get("/site.wacz", archive)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


async def replay_frame(page: Any, url: str) -> Any:
    """The frame, nested inside the embed, where ReplayWeb.page shows the archived `url`.

    A page whose service worker was still installing when the embed asked for the archive
    can stay blank until it is loaded again, as a reader would reload it: once, after half
    the wait."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        handle = await page.wait_for_function(FIND_FRAME, arg=url, timeout=WAIT_MS // 2)
    except PlaywrightTimeout:
        await page.reload()
        handle = await page.wait_for_function(FIND_FRAME, arg=url, timeout=WAIT_MS)
    await handle.dispose()
    for frame in page.frames:
        if frame.url.endswith("mp_/" + url):
            return frame
    raise AssertionError(f"no replay frame for {url}: {[f.url for f in page.frames]}")
