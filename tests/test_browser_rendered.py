"""What a `--browser` crawl stored of a page built by scripts (its rendered DOM and screenshot),
as the export writes it and as `archiver serve` shows it.

One real crawl in headless Chromium (tests/script_site.py: the text comes from fetch(), a
script adds a link) serves both tests.
"""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.mirror.export import ExportOptions, export_mirror
from archiver_plugins.replay.app import make_app
from browser import chromium_path, launch_browser
from script_site import TEXT, build_script_page

from archiver.cli import main
from archiver.testing import Site

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An archive of the script site crawled with --browser, and the site's home URL."""
    chromium_path()
    archive = tmp_path_factory.mktemp("rendered") / "site.archive"

    async def crawl() -> str:
        site = Site()
        await site.start()
        try:
            build_script_page(site)
            args = ["crawl", site.url("/"), "-o", str(archive), "--delay", "0", "--ignore-robots", "-q"]
            assert await asyncio.to_thread(main, [*args, "--browser"]) == 0
            return site.url("/")
        finally:
            await site.close()

    return archive, asyncio.run(crawl())


async def test_the_export_writes_pages_as_rendered(rendered: tuple[Path, str], tmp_path: Path) -> None:
    """A page built by scripts is exported as the browser rendered it, its links rewritten to
    the exported files and without the scripts that would empty it again from disk; opened
    from file:// it shows the text its fetch() brought."""
    archive, _home = rendered
    out = tmp_path / "mirror"
    result = await asyncio.to_thread(export_mirror, archive, out, ExportOptions())
    assert result.errors == [] and result.rendered >= 3  # home, added.html, pushed.html
    assert "as rendered by the browser" in result.summary()
    [home] = [p for p in out.rglob("index.html") if p.parent != out]
    exported = home.read_text(encoding="utf-8")
    assert TEXT in exported and "<script" not in exported
    assert 'href="added.html"' in exported  # the link a script added, to its exported file

    async with launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]
        off_disk: list[str] = []

        async def only_files(route: Any) -> None:
            if route.request.url.startswith("file://"):
                await route.continue_()
            else:
                off_disk.append(route.request.url)
                await route.abort()

        await context.route("**/*", only_files)
        page = await context.new_page()
        await page.goto(home.as_uri())
        assert await page.inner_text("#text") == TEXT
        await page.click("#nav a")
        await page.wait_for_load_state("load")
        assert page.url.endswith("/added.html") and await page.title() == "Added"
        assert off_disk == []


async def test_the_captures_page_shows_the_rendered_page_and_screenshot(rendered: tuple[Path, str]) -> None:
    archive, home = rendered
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        history = await client.get(f"/history?url={quote(home, safe='')}")
        body = await history.text()
        assert history.status == 200 and "As rendered by the browser" in body
        links = dict(re.findall(r'<a href="(/rendered/(?:dom|screenshot)/[^"]+)">([^<]+)</a>', body))
        [dom_link] = [html.unescape(link) for link, label in links.items() if label == "rendered page"]
        [shot_link] = [html.unescape(link) for link, label in links.items() if label == "screenshot"]

        shot = await client.get(shot_link)
        image = await shot.read()
        assert shot.status == 200 and shot.headers["Content-Type"] == "image/png"
        assert image.startswith(b"\x89PNG\r\n\x1a\n")
        assert "script-src 'none'" in shot.headers["Content-Security-Policy"]

        dom = await client.get(dom_link)
        page = await dom.text()
        assert dom.status == 200 and dom.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "script-src 'none'" in dom.headers["Content-Security-Policy"]
        assert TEXT in page and "<script" not in page and "Rendered by the browser" in page
        assert re.search(rf'href="/replay/\d{{14}}/{re.escape(home)}added.html"', page), page

        assert (await client.get(f"/rendered/dom/2/{home}nothing.html")).status == 404
        assert (await client.get(f"/rendered/video/2/{home}")).status == 404
        assert (await client.get("/rendered/dom/2/ftp://x/")).status == 400
    finally:
        await client.close()
