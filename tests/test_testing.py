"""archiver.testing, the fixtures plugin authors get: the loopback Site, the crawl, records by hand."""

from __future__ import annotations

import aiohttp
import pytest

from archiver.testing import (
    CrawlFn,
    Resource,
    Site,
    make_crawl,
    make_page,
    plugin_module,
    read_report,
)


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[int, str, bytes]:
    async with session.get(url, allow_redirects=False) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.read()


async def test_a_site_serves_a_dict_of_pages_and_counts_requests(site: Site) -> None:
    site.serve(
        {
            "/": "<a href='/a'>a</a>",
            "/logo.png": Resource(b"\x89PNG", content_type="image/png", headers={"ETag": '"1"'}),
            "/gone": Resource("gone", status=410),
        }
    )
    site.redirect("/old", "/")
    async with aiohttp.ClientSession() as session:
        assert await fetch(session, site.url("/")) == (200, "text/html; charset=utf-8", b"<a href='/a'>a</a>")
        assert await fetch(session, site.url("/logo.png")) == (200, "image/png", b"\x89PNG")
        assert (await fetch(session, site.url("/gone")))[0] == 410
        assert (await fetch(session, site.url("/old")))[0] == 302
        assert (await fetch(session, site.url("/nothing")))[0] == 404
    assert site.hits == {"/": 1, "/logo.png": 1, "/gone": 1, "/old": 1, "/nothing": 1}
    assert site.host == site.url("")[len("http://") :]


async def test_a_closed_site_refuses_connections() -> None:
    server = Site()
    await server.start()
    url = server.url("/")
    await server.close()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await fetch(session, url)


async def test_a_crawl_of_a_loose_web_reaches_every_page(site: Site, crawl_archive: CrawlFn) -> None:
    site.loose_web(60, images=True)
    crawl = await crawl_archive(site.url("/p0"))
    assert {f"/p{i}" for i in range(60)} <= set(site.hits)
    assert {"/r0", "/img0.png", "/missing0"} <= set(site.hits)
    report = read_report(crawl.archive)
    assert report["pages"] == len(site.hits) == crawl.stats["pages"]


async def test_a_fan_is_one_page_linking_many(site: Site, crawl_archive: CrawlFn) -> None:
    site.fan(8, delay=0.01, body="<p>leaf</p>")
    await crawl_archive(site.url("/"), max_tasks=2)
    assert site.hits == {"/": 1, **{f"/p{i}": 1 for i in range(8)}}
    assert site.max_in_flight == 2


def test_records_by_hand() -> None:
    page = make_page("http://example.org/", "<p>é</p>", depth=2)
    assert (page.content_type, page.text, page.depth, page.body) == ("text/html", "<p>é</p>", 2, page.content)
    bare = make_page("http://example.org/x", b"x", content_type=None, headers=(("ETag", '"1"'),))
    assert bare.headers == (("ETag", '"1"'),)
    crawl = make_crawl("http://example.org/", max_links_per_page=3)
    assert crawl.roots == crawl.config.roots == ("http://example.org/",)
    assert crawl.config.max_links_per_page == 3


def test_plugins_are_named_as_installed() -> None:
    assert plugin_module("links") == "archiver_plugins.links"
    with pytest.raises(ValueError, match="no installed plugin 'nope'"):
        plugin_module("nope")
