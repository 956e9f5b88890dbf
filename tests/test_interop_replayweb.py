"""ReplayWeb.page (the `replaywebpage` npm package's ui.js and sw.js) replays the exported WACZ in Chromium.

A local aiohttp server hosts a page embedding `<replay-web-page>`, the package's `ui.js` and
`sw.js` under /replay/ (where the embed registers its service worker), and the WACZ, which
the service worker reads by HTTP range requests. The site's own server is gone by then.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from browser import launch_browser
from interop_site import HEADING_RGB, PAGES, REPLAYWEB_DIR, Exported, crawl_and_export, need

WAIT_MS = 30_000
# Draws the page's image on a canvas and reads one pixel: null until it has loaded and decoded.
PIXEL = """() => {
  const img = document.getElementById('picture');
  if (!img || !img.complete || !img.naturalWidth) return null;
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(img, 0, 0);
  return Array.from(context.getImageData(5, 5, 1, 1).data.slice(0, 3));
}"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    need(REPLAYWEB_DIR / "sw.js", "ReplayWeb.page", "npm pack replaywebpage, then unpack ui.js and sw.js")
    yield crawl_and_export(tmp_path_factory.mktemp("replayweb"))


@pytest.fixture
async def host(exported: Exported) -> AsyncIterator[str]:
    """Base URL of a server hosting the embed page, ReplayWeb.page and the WACZ."""

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

    async def wacz(request: web.Request) -> web.FileResponse:
        return web.FileResponse(exported.wacz, headers={"Content-Type": "application/wacz+zip"})

    app = web.Application()
    app.router.add_get("/", embed)
    app.router.add_get("/replay/{name}", replay_file)
    app.router.add_get("/site.wacz", wacz)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


async def replay_frame(page: Any, url: str) -> Any:
    """The frame, nested inside the embed, where ReplayWeb.page shows the archived `url`."""
    handle = await page.wait_for_function(
        """(url) => {
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
        }""",
        arg=url,
        timeout=WAIT_MS,
    )
    await handle.dispose()
    for frame in page.frames:
        if frame.url.endswith("mp_/" + url):
            return frame
    raise AssertionError(f"no replay frame for {url}: {[f.url for f in page.frames]}")


async def check_page(frame: Any, path: str) -> None:
    """The page's own text, its stylesheet's colour and its image's colour, as archived."""
    title, words, rgb, _link = PAGES[path]
    await frame.wait_for_selector("#words", timeout=WAIT_MS)
    assert await frame.inner_text("#heading") == title
    assert await frame.inner_text("#words") == words
    colour = "rgb({}, {}, {})".format(*HEADING_RGB)  # set by the archived stylesheet only
    await frame.wait_for_function(
        "(colour) => getComputedStyle(document.getElementById('heading')).color === colour",
        arg=colour,
        timeout=WAIT_MS,
    )
    pixel = await frame.wait_for_function(PIXEL, timeout=WAIT_MS)
    assert await pixel.json_value() == list(rgb)


async def test_replaywebpage_replays_three_pages_and_follows_a_link(host: str, exported: Exported) -> None:
    async with launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]
        page = await context.new_page()
        for path in PAGES:
            await page.goto(f"{host}/?url={exported.url(path)}")
            await check_page(await replay_frame(page, exported.url(path)), path)

        await page.goto(f"{host}/?url={exported.url('/')}")
        first = await replay_frame(page, exported.url("/"))
        await check_page(first, "/")
        await first.click("#next")
        second = await replay_frame(page, exported.url("/second.html"))
        await check_page(second, "/second.html")
        await context.close()
