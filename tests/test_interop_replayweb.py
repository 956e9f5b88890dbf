"""ReplayWeb.page (the `replaywebpage` npm package's ui.js and sw.js) replays the exported WACZ in Chromium.

A local aiohttp server (tests/replayweb.py) hosts a page embedding `<replay-web-page>`, the
package's `ui.js` and `sw.js`, and the WACZ. The site's own server is gone by then.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from browser import launch_browser
from interop_site import HEADING_RGB, PAGES, REPLAYWEB_DIR, Exported, crawl_and_export, need
from replayweb import WAIT_MS, replay_frame, serve_replayweb

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
    async with serve_replayweb(exported.wacz) as base:
        yield base


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
