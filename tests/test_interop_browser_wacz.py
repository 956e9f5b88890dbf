"""A page built by scripts, captured with `archiver crawl --browser`, replays from its WACZ in ReplayWeb.page.

The site (tests/script_site.py) fills its text from fetch() of a JSON file, adds a link by
script and loads an image, through a redirect, only when scrolled to. It is crawled with the
browser on, its server is shut down, the archive is exported with `archiver export ARCHIVE
x.wacz`, and ReplayWeb.page opens the WACZ in Chromium, where every request to the site's
origin is aborted and counted: whatever the page shows comes from the WACZ.
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from browser import chromium_path, launch_browser
from interop_site import REPLAYWEB_DIR, need
from replayweb import WAIT_MS, replay_frame, serve_replayweb
from script_site import TEXT, build_script_page

from archiver.cli import main
from archiver.testing import Site

pytestmark = pytest.mark.timeout(90)


async def test_browser_capture_replays_from_wacz_in_replaywebpage(tmp_path: Path) -> None:
    chromium_path()
    need(REPLAYWEB_DIR / "sw.js", "ReplayWeb.page", "npm pack replaywebpage, then unpack ui.js and sw.js")
    site = Site()
    await site.start()
    try:
        build_script_page(site)
        home = site.url("/")
        origin = site.url("")
        added = site.url("/added.html")
        archive = tmp_path / "site.archive"
        crawl = ["crawl", home, "-o", str(archive), "--delay", "0", "--ignore-robots", "-q", "--browser"]
        assert await asyncio.to_thread(main, crawl) == 0
        for path in ("/data.json", "/img/old-lazy.png", "/img/lazy.png"):
            assert site.hits[path] == 1, f"{path} was fetched {site.hits[path]} times by the crawl"
    finally:
        await site.close()
    wacz = tmp_path / "x.wacz"
    assert await asyncio.to_thread(main, ["export", str(archive), str(wacz), "-q"]) == 0
    with zipfile.ZipFile(wacz) as package:
        pages = [json.loads(line) for line in package.read("pages/pages.jsonl").splitlines()[1:]]
    assert TEXT in {page["url"]: page for page in pages}[home]["text"], "ReplayWeb.page's search misses it"

    to_origin: list[str] = []
    async with serve_replayweb(wacz) as base, launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]

        async def no_route_to_the_site(route: Any) -> None:
            if route.request.url.startswith(origin):
                to_origin.append(route.request.url)
                await route.abort()
            else:
                await route.continue_()

        await context.route("**/*", no_route_to_the_site)
        page = await context.new_page()
        await page.goto(f"{base}/?url={home}")
        frame = await replay_frame(page, home)
        await frame.wait_for_function(
            f"document.getElementById('text')?.textContent === {json.dumps(TEXT)}", timeout=WAIT_MS
        )
        link = frame.locator("#nav a")
        assert await link.inner_text() == "added by a script"
        assert await link.evaluate("a => a.href") == added  # as the page sees it, under replay
        assert await frame.evaluate("document.getElementById('lazy').naturalWidth") == 0
        await frame.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        await frame.wait_for_function(
            "(img => img.complete && img.naturalWidth === 40)(document.getElementById('lazy'))",
            timeout=WAIT_MS,
        )
        await context.close()
    assert to_origin == [], f"requests went to the site's origin: {to_origin}"
