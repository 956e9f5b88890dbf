"""The captures list, the diff and the changes pages in a real browser, reached as a user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer
from archiver_plugins.replay.app import make_app
from browser import launch_browser
from changing_site import add_not_modified_crawl, crawl_twice, next_second

from archiver.testing import Site

HOSTILE_EDIT = (
    "<title>Edited</title><p>&lt;img src=x onerror=alert(1)&gt; The third draft.</p><p>A line that stays.</p>"
)


async def test_from_the_banner_to_a_diff_and_from_changes_to_a_diff(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    await next_second()
    add_not_modified_crawl(archive, site.url(""), HOSTILE_EDIT)
    server = TestServer(make_app([archive]), host="127.0.0.1")
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    requested: list[str] = []
    dialogs: list[str] = []
    try:
        async with launch_browser() as browser:
            context: Any = await browser.new_context()  # type: ignore[attr-defined]

            async def record(route: Any) -> None:
                requested.append(route.request.url)
                if route.request.url.startswith(base + "/"):
                    await route.continue_()
                else:
                    await route.abort()

            await context.route("**/*", record)
            page = await context.new_page()
            page.on("dialog", lambda dialog: dialogs.append(dialog.message))

            await page.goto(f"{base}/replay/{site.url('/edited')}")
            await page.wait_for_selector("#archiver-banner")
            await page.click("#archiver-banner >> text=3 of 3 captures")
            await page.wait_for_selector("form.compare")
            assert await page.locator("td.kind").all_inner_texts() == ["response", "response", "response"]
            await page.locator("input[name=a]").nth(2).check()  # the oldest against the newest
            await page.click("button[value=side]")
            await page.wait_for_selector("table.diff.side")
            assert await page.locator("td.del").all_inner_texts() == ["The first draft."]
            assert await page.locator("td.ins").all_inner_texts() == [
                "<img src=x onerror=alert(1)> The third draft."
            ]

            await page.click("nav.views >> text=Unified")
            await page.wait_for_selector("pre.diff.unified")
            added = await page.locator("pre.diff span.ins").all_inner_texts()
            assert added == ["+<img src=x onerror=alert(1)> The third draft."]
            assert await page.evaluate("document.querySelectorAll('main img, main script').length") == 0

            await page.click("header.top >> text=Changes")
            await page.wait_for_selector("p.count")
            await page.click("nav.views >> text=2 (recrawl")
            await page.wait_for_selector("table.changes")
            row = page.locator("table.changes tr", has_text=site.url("/edited"))
            await row.locator("text=diff").click()
            await page.wait_for_selector("pre.diff.unified")
            assert await page.locator("pre.diff span.ins").all_inner_texts() == ["+The second draft."]
            await page.wait_for_timeout(200)
    finally:
        await server.close()
    assert dialogs == []
    assert [url for url in requested if not url.startswith(base + "/")] == []
