"""The exported mirror in a real browser: opened from disk with every network request blocked.

Headless Debian Chromium opens file://DIR/index.html.  A Playwright route aborts any
request that is not for a file, and every request the page makes is recorded, so
"everything loaded from the exported files" is checked: no failed request, no request
off disk, the image decoded (naturalWidth), the stylesheet and its @import applied
(computed styles), the web font loaded, the script ran, and links navigate between
exported pages.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from archiver_plugins.mirror.export import ExportOptions, export_mirror
from browser import launch_browser
from mirror_site import FONT, build_site

from archiver.testing import CrawlFn, Site


async def test_mirror_opens_offline_in_chromium(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    build_site(site, other_site)
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"))
    out = tmp_path / "mirror"
    result = await asyncio.to_thread(export_mirror, crawl.archive, out, ExportOptions())
    assert result.errors == []
    await site.close()  # the live site is gone: only the files can answer
    await other_site.close()

    requested: list[str] = []
    failed: list[str] = []
    blocked: list[str] = []
    async with launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]

        async def only_files(route: Any) -> None:
            if route.request.url.startswith("file://"):
                await route.continue_()
            else:
                blocked.append(route.request.url)
                await route.abort()

        await context.route("**/*", only_files)
        page = await context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.on("requestfailed", lambda request: failed.append(f"{request.url} {request.failure}"))

        await page.goto((out / "index.html").as_uri())
        await page.click("a")  # the landing page links each site's start page
        await page.wait_for_load_state("load")
        assert page.url.endswith("/index.html") and await page.title() == "Home page"
        await page.evaluate("document.fonts.ready")

        assert await page.evaluate("getComputedStyle(document.querySelector('h1')).color") == (
            "rgb(10, 120, 30)"
        ), "the stylesheet did not apply"
        assert await page.evaluate("getComputedStyle(document.getElementById('bg')).backgroundColor") == (
            "rgb(1, 2, 3)"
        )
        for image in ("logo", "pic"):
            width = await page.evaluate(f"document.getElementById('{image}').naturalWidth")
            assert width > 0, f"image #{image} did not load"
        # srcset: the browser picked a candidate from the rewritten list, and it is a file.
        chosen = await page.evaluate("document.getElementById('logo').currentSrc")
        assert chosen.startswith("file://") and chosen.endswith(("/img/logo.png", "/img/logo-2x.png"))
        assert await page.evaluate("document.documentElement.dataset.script") == "ran"
        if FONT.exists():
            status = await page.evaluate(
                "[...document.fonts].filter(f => f.family.includes('Mirror Test')).map(f => f.status)"
            )
            assert status == ["loaded"], "the @font-face font (from an @import-ed sheet) did not load"
        background = await page.evaluate("getComputedStyle(document.getElementById('bg')).backgroundImage")
        assert background.startswith('url("file://') and background.endswith('/img/bg.png")')

        await page.click("#to-about")
        await page.wait_for_load_state("load")
        assert page.url.endswith("/about.html") and await page.title() == "About us"
        await page.click("text=../docs/page")
        await page.wait_for_load_state("load")
        assert page.url.endswith("/docs/page.html")
        await page.go_back()
        await page.go_back()
        await page.click("#to-old")  # a link to a redirect goes straight to its target
        await page.wait_for_load_state("load")
        assert page.url.endswith("/about.html")
        await page.go_back()
        await page.click("#to-shop")
        await page.wait_for_load_state("load")
        assert await page.title() == "Red item"
        await page.wait_for_timeout(100)
        assert failed == [], f"requests failed: {failed}"
        assert blocked == [], f"requests left the disk: {blocked}"
        assert [url for url in requested if not url.startswith("file://")] == []

        # The harness itself: a request off disk is seen and stopped.
        probe = "http://127.0.0.1:9/probe"
        await page.evaluate(f"fetch('{probe}').catch(() => 0)")
        await page.wait_for_timeout(100)
        assert blocked == [probe]
    for name in ("css/site.css", "css/fonts.css", "js/app.js", "img/bg.png", "img/paper.png"):
        assert any(url.endswith(name) for url in requested), name
    if FONT.exists():
        assert any(url.endswith("fonts/test.ttf") for url in requested)
