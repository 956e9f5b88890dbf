"""`archiver serve` in a real browser: search a crawled site, open a result, follow a link.

Every request the browser makes is recorded by a Playwright route; anything not aimed
at the archive server is aborted and fails the test, so "nothing leaves the server"
is checked, not assumed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from archiver_plugins.replay.app import make_app
from browser import launch_browser
from mirror_site import png

from archiver.testing import CrawlFn, Site

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def build_garden(site: Site, other: Site) -> None:
    site.page(
        "/",
        f"""<!doctype html><html><head><title>Garden notes</title>
        <link rel="stylesheet" href="/css/garden.css"></head>
        <body><h1>Garden notes</h1>
        <p>What grows where: a diary of the vegetable patch.</p>
        <img id="leaf" src="img/leaf.png" alt="leaf" width="30" height="20">
        <ul><li><a href="/tomatoes">Tomatoes</a></li><li><a href="/basil">Basil</a></li></ul>
        <script>fetch("{other.url("/beacon")}").catch(() => 0);</script>
        </body></html>""",
    )
    site.page(
        "/css/garden.css",
        "@import 'type.css';\nh1 { color: rgb(200, 30, 40); }\n"
        "body { background: url('../img/paper.png') repeat; }\n",
        content_type="text/css",
    )
    site.page("/css/type.css", "p { letter-spacing: 1px; }", content_type="text/css")
    site.page("/img/leaf.png", png(30, 20, (30, 160, 60)), content_type="image/png")
    site.page("/img/paper.png", png(4, 4, (250, 248, 240)), content_type="image/png")
    site.page(
        "/tomatoes",
        """<!doctype html><html><head><title>Tomatoes in July</title>
        <link rel="stylesheet" href="/css/garden.css"></head>
        <body><h1>Tomatoes</h1><p>The heirloom tomatoes ripened late this year, after a wet June.</p>
        <img id="leaf" src="/img/leaf.png" alt="leaf">
        <p><a href="/basil">Basil grows beside them</a> and
        <a href="/never-crawled">a page nobody kept</a>.</p>
        </body></html>""",
    )
    site.page(
        "/basil",
        """<!doctype html><html><head><title>Basil</title></head>
        <body><h1 id="basil">Basil</h1><p>Sweet basil likes the sun.</p></body></html>""",
    )
    other.page("/beacon", "tracked")


@pytest.fixture
async def garden(site: Site, other_site: Site, crawl_archive: CrawlFn) -> AsyncIterator[tuple[str, Site]]:
    build_garden(site, other_site)
    crawl = await crawl_archive(
        site.url("/"), plugins=("links", "warc", "index"), exclude=(r"/never-crawled",)
    )
    server = TestServer(make_app([crawl.archive]), host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/"), site
    finally:
        await server.close()


async def test_search_click_replay_follow(garden: tuple[str, Site], other_site: Site) -> None:
    base, site = garden
    hits_after_crawl = dict(site.hits)
    requested: list[str] = []
    dialogs: list[str] = []
    async with launch_browser() as browser:
        context: Any = await browser.new_context(viewport={"width": 1100, "height": 700})  # type: ignore[attr-defined]

        async def record(route: Any) -> None:
            url = route.request.url
            requested.append(url)
            if url.startswith(base + "/"):
                await route.continue_()
            else:
                await route.abort()

        await context.route("**/*", record)
        page = await context.new_page()
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))

        await page.goto(base + "/")
        await page.fill("input[name=q]", "tomatoes")
        await page.press("input[name=q]", "Enter")
        await page.wait_for_selector("li.hit")
        assert await page.inner_text("li.hit a.title") == "Tomatoes in July"
        assert "tomatoes" in (await page.inner_html("li.hit .snippet")).lower()
        assert "2 results in" in await page.inner_text("p.count")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "search.png"), full_page=True)

        await page.click("li.hit a.title")
        await page.wait_for_selector("#archiver-banner")
        await page.wait_for_load_state("load")
        assert "/replay/" in page.url and page.url.endswith(site.url("/tomatoes"))
        assert await page.title() == "Tomatoes in July"
        color = await page.evaluate("getComputedStyle(document.querySelector('h1')).color")
        assert color == "rgb(200, 30, 40)", "the archived stylesheet was not applied"
        spacing = await page.evaluate("getComputedStyle(document.querySelector('p')).letterSpacing")
        assert spacing == "1px", "the stylesheet's @import was not replayed"
        width = await page.evaluate(
            "document.getElementById('leaf').complete && document.getElementById('leaf').naturalWidth"
        )
        assert width == 30, "the archived image did not load"
        banner = await page.inner_text("#archiver-banner")
        assert site.url("/tomatoes") in banner and "1 of 1 capture" in banner
        missing = await page.get_attribute("text=a page nobody kept", "href")
        assert missing is not None and missing.startswith("/missing/")

        await page.click("text=Basil grows beside them")
        await page.wait_for_selector("#basil")
        assert page.url.endswith(site.url("/basil"))
        assert await page.inner_text("#basil") == "Basil"

        await page.goto(base + "/replay/2/" + site.url("/"))
        await page.wait_for_selector("#archiver-banner")
        await page.wait_for_timeout(300)  # give the archived script its chance to call out

    assert requested, "the route handler saw no request"
    leaving = [url for url in requested if not url.startswith(base + "/")]
    assert leaving == [], f"requests left the archive server: {leaving}"
    assert any(url.endswith("/img/leaf.png") for url in requested)
    assert any(url.endswith("/img/paper.png") for url in requested)
    assert dict(site.hits) == hits_after_crawl, "the live site was contacted during replay"
    assert other_site.hits["/beacon"] == 0
    assert dialogs == []
