"""The crawl engine against real local sites: the 500 Lines crawler's own cases and more."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver import Crawl, FetchError, Link, LinkKind, Page, hookimpl
from archiver.crawllog import build_report
from archiver.errors import SeedError
from archiver.runner import human_summary
from archiver.testing import CrawlFn, Site


def log_records(crawl: Crawl) -> list[dict[str, Any]]:
    lines = (crawl.archive / "crawl-log.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def fetched(crawl: Crawl) -> dict[str, dict[str, Any]]:
    return {r["url"]: r for r in log_records(crawl) if r["outcome"] != "skipped"}


class Recorder:
    """Records every hook call; page_fetched is async so the await path is always exercised."""

    def __init__(self) -> None:
        self.pages: list[Page] = []
        self.links: dict[str, list[Link]] = {}
        self.failed: list[tuple[str, FetchError]] = []
        self.started = 0
        self.finished = 0

    @hookimpl
    async def crawl_started(self, crawl: Crawl) -> None:
        self.started += 1

    @hookimpl
    async def page_fetched(self, page: Page, links: list[Link]) -> None:
        await asyncio.sleep(0)
        self.pages.append(page)
        self.links[page.url] = list(links)

    @hookimpl
    def fetch_failed(self, url: str, error: FetchError) -> None:
        self.failed.append((url, error))

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        self.finished += 1


async def test_links_and_404(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/foo", "/missing"])
    site.page("/foo", links=[])
    crawl = await crawl_archive(site.url("/"))
    records = fetched(crawl)
    assert records[site.url("/missing")]["status"] == 404
    assert records[site.url("/foo")]["status"] == 200
    assert records[site.url("/")]["num_urls"] == 2
    assert records[site.url("/")]["num_new_urls"] == 2
    assert crawl.stats["status_4xx"] == 1


async def test_link_cycle_fetches_each_page_once(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a"])
    site.page("/a", links=["/b"])
    site.page("/b", links=["/", "/a"])
    await crawl_archive(site.url("/"))
    assert site.hits == {"/": 1, "/a": 1, "/b": 1}


async def test_foreign_host_ignored(site: Site, other_site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=[other_site.url("/"), "/local"])
    site.page("/local")
    other_site.page("/")
    crawl = await crawl_archive(site.url("/"))
    assert other_site.hits == {}
    skipped = [r for r in log_records(crawl) if r["outcome"] == "skipped"]
    assert skipped == [
        {
            "url": other_site.url("/"),
            "outcome": "skipped",
            "reason": f"host: {other_site.host} is not the host of a root"
            " (strict; --lenient admits their subdomains)",
            "referrer": site.url("/"),
            "depth": 1,
        }
    ]


async def test_requisites_from_other_host_fetched_but_not_followed(
    site: Site, other_site: Site, crawl_archive: CrawlFn
) -> None:
    site.page("/", body=f'<img src="{other_site.url("/pic.html")}"><a href="/next">n</a>')
    site.page("/next")
    other_site.page("/pic.html", links=["/deeper"])
    await crawl_archive(site.url("/"))
    assert other_site.hits == {"/pic.html": 1}
    assert site.hits == {"/": 1, "/next": 1}


async def test_no_requisites_switch(site: Site, other_site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", body=f'<img src="{other_site.url("/pic.png")}">')
    await crawl_archive(site.url("/"), requisites=False)
    assert other_site.hits == {}


async def test_exclude_and_include(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    site.page("/", links=["/keep/1", "/drop/1", "/other"])
    for path in ("/keep/1", "/drop/1", "/other"):
        site.page(path)
    await crawl_archive(site.url("/"), exclude=("/drop/",))
    assert "/drop/1" not in site.hits and "/keep/1" in site.hits
    site.hits.clear()
    await crawl_archive(site.url("/"), include=("/keep/",), output=str(tmp_path / "second"))
    assert set(site.hits) == {"/", "/keep/1"}


async def test_include_narrows_pages_not_their_requisites(site: Site, crawl_archive: CrawlFn) -> None:
    site.page(
        "/docs/",
        body='<link rel="stylesheet" href="/_static/pygments.css"><img src="/img/a.png">'
        '<a href="/docs/next">n</a><a href="/blog/">b</a>',
    )
    site.page("/docs/next")
    site.page("/blog/")
    site.page("/_static/pygments.css", '@import url("base.css");', content_type="text/css")
    site.page("/_static/base.css", "body{}", content_type="text/css")
    site.page("/img/a.png", "png", content_type="image/png")
    crawl = await crawl_archive(site.url("/docs/"), include=("/docs/",), exclude=("a\\.png$",))
    assert set(site.hits) == {"/docs/", "/docs/next", "/_static/pygments.css", "/_static/base.css"}
    assert crawl.stats["skipped_include"] == 1 and crawl.stats["skipped_exclude"] == 1
    summary = human_summary(build_report(crawl))
    assert "Skipped: " in summary and "include 1" in summary and "no 1" not in summary, summary


async def test_several_roots(site: Site, other_site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a"])
    site.page("/a")
    other_site.page("/", links=["/b"])
    other_site.page("/b")
    await crawl_archive([site.url("/"), other_site.url("/")])
    assert set(site.hits) == {"/", "/a"}
    assert set(other_site.hits) == {"/", "/b"}


async def test_deep_root_with_fragment_scopes_to_its_host(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/deep/page", links=["/", "/deep/other"])
    site.page("/", links=[])
    site.page("/deep/other")
    await crawl_archive(site.url("/deep/page#section"))
    assert set(site.hits) == {"/deep/page", "/", "/deep/other"}


async def test_redirect_chain_followed(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/r1"])
    site.redirect("/r1", "/r2", status=301)
    site.redirect("/r2", "/r3", status=307)
    site.page("/r3")
    recorder = Recorder()
    crawl = await crawl_archive(site.url("/"), extra=[recorder])
    assert site.hits["/r3"] == 1
    records = fetched(crawl)
    assert records[site.url("/r1")]["next_url"] == site.url("/r2")
    assert records[site.url("/r1")]["status"] == 301
    redirects = [p for p in recorder.pages if p.is_redirect]
    assert len(redirects) == 2
    assert crawl.stats["redirects"] == 2


async def test_redirect_limit(site: Site, crawl_archive: CrawlFn, caplog: pytest.LogCaptureFixture) -> None:
    for i in range(5):
        site.redirect(f"/r{i}", f"/r{i + 1}")
    site.page("/r5")
    crawl = await crawl_archive(site.url("/r0"), max_redirect=2)
    assert set(site.hits) == {"/r0", "/r1", "/r2"}
    assert "redirect limit reached" in caplog.text
    assert crawl.stats["redirect_limit"] == 1


async def test_redirect_cycle_terminates(site: Site, crawl_archive: CrawlFn) -> None:
    site.redirect("/a", "/b")
    site.redirect("/b", "/a")
    await crawl_archive(site.url("/a"))
    assert site.hits == {"/a": 1, "/b": 1}


async def test_redirect_join_is_coalesced(site: Site, crawl_archive: CrawlFn) -> None:
    """Two chains ending at one page: it is fetched once, the second chain stops where it joins."""
    site.page("/", links=["/foo", "/bar"])
    site.redirect("/foo", "/baz")
    site.redirect("/bar", "/baz")
    site.page("/baz")
    crawl = await crawl_archive(site.url("/"), max_tasks=1)
    assert site.hits["/baz"] == 1
    assert crawl.stats["redirects_coalesced"] == 1


async def test_redirect_to_non_http_is_not_followed(site: Site, crawl_archive: CrawlFn) -> None:
    site.redirect("/", "javascript:alert(1)")
    crawl = await crawl_archive(site.url("/"))
    skipped = [r for r in log_records(crawl) if r["outcome"] == "skipped"]
    assert skipped[0]["reason"] == "redirect to a non-http(s) URL"


async def test_max_tasks_never_exceeded(site: Site, crawl_archive: CrawlFn) -> None:
    site.fan(30, delay=0.05, body="<p>leaf</p>")
    await crawl_archive(site.url("/"), max_tasks=3)
    assert site.max_in_flight == 3
    assert len(site.hits) == 31


async def test_a_page_being_processed_holds_no_fetching_turn(site: Site, crawl_archive: CrawlFn) -> None:
    """While a plugin takes its time over one page, the next request is already under way,
    to the same host: the server is asked while pages are processed, and never more than
    max_tasks and per_host_concurrency at once."""
    site.fan(6, delay=0.05, body="<p>leaf</p>")
    asked_meanwhile: list[int] = []

    class Slow:
        @hookimpl
        async def page_fetched(self, page: Page, links: list[Link]) -> None:
            before = site.hits.total()
            await asyncio.sleep(0.2)
            asked_meanwhile.append(site.hits.total() - before)

    await crawl_archive(site.url("/"), max_tasks=1, per_host_concurrency=1, delay=0, extra=[Slow()])
    assert len(site.hits) == 7
    assert site.max_in_flight == 1
    assert sum(asked_meanwhile) >= 5  # each leaf but the first asked while a page before it was processed


async def test_per_host_concurrency_limit(site: Site, crawl_archive: CrawlFn) -> None:
    site.fan(12, delay=0.05, body="<p>leaf</p>")
    await crawl_archive(site.url("/"), max_tasks=10, per_host_concurrency=2)
    assert site.max_in_flight == 2


async def test_retry_after_dropped_connection(site: Site, crawl_archive: CrawlFn) -> None:
    attempts = 0

    async def flaky(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            assert request.transport is not None
            request.transport.close()
        return web.Response(text="ok", content_type="text/plain")

    site.handler("/", flaky)
    crawl = await crawl_archive(site.url("/"), max_tries=4)
    record = fetched(crawl)[site.url("/")]
    assert record["status"] == 200
    # aiohttp itself retries once a request whose pooled connection was closed.
    assert record["tries"] >= 2
    assert crawl.stats["retries"] == record["tries"] - 1


async def test_give_up_after_max_tries(site: Site, crawl_archive: CrawlFn) -> None:
    async def broken(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.close()
        return web.Response(text="never")

    site.page("/", links=["/broken"])
    site.handler("/broken", broken)
    recorder = Recorder()
    crawl = await crawl_archive(site.url("/"), max_tries=3, extra=[recorder])
    record = fetched(crawl)[site.url("/broken")]
    assert record["status"] is None
    assert record["tries"] == 3
    assert record["error"]
    assert 3 <= site.hits["/broken"] <= 6
    assert [url for url, _ in recorder.failed] == [site.url("/broken")]
    assert recorder.failed[0][1].attempts == 3
    assert crawl.stats["failed"] == 1


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("text/html; charset=iso-8859-1", "café".encode("latin-1"), "iso8859-1"),
        ("text/html", '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"), "cp1251"),
        ("text/html; charset=x-no-such-charset", b"<p>plain</p>", "utf-8"),
        ("text/html", b"\xef\xbb\xbf<p>bom</p>", "utf-8-sig"),
        ("text/plain", "ünïcödé".encode(), "utf-8"),
    ],
)
async def test_charsets(
    site: Site, crawl_archive: CrawlFn, content_type: str, body: bytes, expected: str
) -> None:
    site.page("/", body=body, content_type=content_type)
    crawl = await crawl_archive(site.url("/"))
    assert fetched(crawl)[site.url("/")]["encoding"] == expected


async def test_binary_served_as_html_is_recorded(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", body=bytes(range(256)) * 40, content_type="text/html")
    recorder = Recorder()
    crawl = await crawl_archive(site.url("/"), extra=[recorder])
    assert fetched(crawl)[site.url("/")]["status"] == 200
    assert recorder.pages[0].body == bytes(range(256)) * 40


async def test_content_types(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", body='<a href="/img.png">i</a><a href="/doc.txt">t</a>')
    site.page("/img.png", body=b"\x89PNG....<a href='/hidden'>", content_type="image/png")
    site.page("/doc.txt", body="<a href='/hidden2'>", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"))
    records = fetched(crawl)
    assert records[site.url("/img.png")]["content_type"] == "image/png"
    assert records[site.url("/img.png")]["num_urls"] == 0
    assert "/hidden" not in site.hits and "/hidden2" not in site.hits


async def test_links_in_xml(site: Site, crawl_archive: CrawlFn) -> None:
    site.page(
        "/feed.xml",
        body='<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><link href="/post1"/></feed>',
        content_type="application/xml",
    )
    site.page("/post1")
    await crawl_archive(site.url("/feed.xml"))
    assert site.hits["/post1"] == 1


async def test_non_http_links_ignored(site: Site, crawl_archive: CrawlFn) -> None:
    site.page(
        "/",
        body='<a href="mailto:a@b.c">m</a><a href="javascript:void(0)">j</a>'
        '<a href="ftp://x/y">f</a><a href="data:text/plain,hi">d</a><a href="/ok">ok</a>',
    )
    site.page("/ok")
    crawl = await crawl_archive(site.url("/"))
    assert set(site.hits) == {"/", "/ok"}
    assert crawl.stats["pages"] == 2


async def test_fragments_and_query_order_deduplicated(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/p?a=1&b=2", "/p?b=2&a=1", "/p?a=1&b=2#top", "/#x"])
    site.page("/p")
    await crawl_archive(site.url("/"))
    assert site.hits == {"/": 1, "/p": 1}


async def test_max_pages(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=[f"/p{i}" for i in range(20)])
    for i in range(20):
        site.page(f"/p{i}")
    crawl = await crawl_archive(site.url("/"), max_pages=5)
    assert len(site.hits) == 5
    assert crawl.stats["limit_max_pages"] == 16


async def test_max_depth(site: Site, crawl_archive: CrawlFn) -> None:
    for i in range(5):
        site.page(f"/d{i}", links=[f"/d{i + 1}"])
    crawl = await crawl_archive(site.url("/d0"), max_depth=2)
    assert set(site.hits) == {"/d0", "/d1", "/d2"}
    skipped = [r for r in log_records(crawl) if r["outcome"] == "skipped"]
    assert skipped[0]["reason"].startswith("depth 3 > max_depth 2")


async def test_hooks_called_in_contract(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a"])
    site.page("/a")
    recorder = Recorder()
    await crawl_archive(site.url("/"), extra=[recorder])
    assert recorder.started == 1 and recorder.finished == 1
    assert sorted(p.url for p in recorder.pages) == [site.url("/"), site.url("/a")]
    assert [link.url for link in recorder.links[site.url("/")]] == [site.url("/a")]


async def test_crashing_plugin_stops_crawl_and_still_finishes(site: Site, crawl_archive: CrawlFn) -> None:
    class Crasher(Recorder):
        @hookimpl
        async def page_fetched(self, page: Page, links: list[Link]) -> None:
            raise RuntimeError("plugin bug")

    site.page("/", links=[f"/p{i}" for i in range(5)])
    recorder = Crasher()
    with pytest.raises(ExceptionGroup) as info:
        await asyncio.wait_for(crawl_archive(site.url("/"), extra=[recorder]), 20)
    assert info.group_contains(RuntimeError, match="plugin bug")
    assert recorder.finished == 1


async def test_cancellation_runs_crawl_finished(site: Site, crawl_archive: CrawlFn) -> None:
    async def hang(request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(text="late")

    site.handler("/", hang)
    recorder = Recorder()
    task = asyncio.create_task(crawl_archive(site.url("/"), extra=[recorder]))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.finished == 1


async def test_unreachable_root_is_a_seed_error(crawl_archive: CrawlFn) -> None:
    with pytest.raises(SeedError, match="no root URL could be fetched"):
        await crawl_archive("http://127.0.0.1:9/", max_tries=1)


async def test_accept_url_hook(site: Site, crawl_archive: CrawlFn) -> None:
    class NoSecrets:
        @hookimpl
        def accept_url(self, url: str) -> bool | None:
            return False if "secret" in url else None

    site.page("/", links=["/secret", "/public"])
    site.page("/public")
    await crawl_archive(site.url("/"), extra=[NoSecrets()])
    assert set(site.hits) == {"/", "/public"}


async def test_extract_links_kinds(site: Site, other_site: Site, crawl_archive: CrawlFn) -> None:
    class Kinds:
        @hookimpl
        def extract_links(self, page: Page) -> list[Link]:
            if page.url == site.url("/"):
                return [Link(other_site.url("/style.css"), LinkKind.REQUISITE)]
            if page.url == other_site.url("/style.css"):
                return [
                    Link(other_site.url("/font.woff"), LinkKind.REQUISITE),
                    Link(other_site.url("/page"), LinkKind.PAGE),
                ]
            return []

    site.page("/")
    other_site.page("/style.css", body="body{}", content_type="text/css")
    other_site.page("/font.woff", body=b"\0", content_type="font/woff")
    await crawl_archive(site.url("/"), plugins=(), extra=[Kinds()])
    assert set(other_site.hits) == {"/style.css", "/font.woff"}


async def test_report_written(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    site.page("/", links=["/missing"])
    crawl = await crawl_archive(site.url("/"))
    report = json.loads((crawl.archive / "report.json").read_text())
    assert report["pages"] == 2
    assert report["by_status_class"] == {"2xx": 1, "4xx": 1}
    assert report["complete"] is True
    assert report["pages_per_second"] > 0
