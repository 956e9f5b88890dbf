"""robots.txt: rules obeyed and explained, odd answers handled as the search engines do."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver import Link, Page, hookimpl
from archiver.errors import SeedError
from archiver.model import Crawl
from archiver.robots import (
    ROBOTS_MAX_SIZE,
    RobotsEntry,
    agent_token,
    entry_from_body,
    origin_of,
    saved_robots,
)
from archiver.testing import CrawlFn, Site

ROBOTS: dict[str, Any] = {"robots": True, "max_tries": 2, "retry_backoff": 0.05}


def log_records(crawl: Crawl) -> list[dict[str, Any]]:
    lines = (crawl.archive / "crawl-log.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def outcome(crawl: Crawl, url: str) -> dict[str, Any]:
    return [r for r in log_records(crawl) if r["url"] == url][-1]


def small_site(site: Site, robots: str | None) -> None:
    site.page("/", links=["/public", "/private/a", "/private/b"])
    site.page("/public", "<html>ok</html>")
    site.page("/private/a", "<html>secret</html>")
    site.page("/private/b", "<html>secret</html>")
    if robots is not None:
        site.page("/robots.txt", robots, content_type="text/plain")


def test_origin_and_agent_token() -> None:
    assert origin_of("http://Example.org:80/a?b") == "http://example.org"
    assert origin_of("https://example.org:8443/") == "https://example.org:8443"
    assert origin_of("http://[::1]:8080/x") == "http://[::1]:8080"
    assert agent_token("archiver/0.1 (+https://example.org/bot)") == "archiver"
    assert agent_token("") == "archiver"


def test_deciding_rule_is_named() -> None:
    body = b"User-agent: *\nDisallow: /private/\nAllow: /private/open\n"
    entry = entry_from_body("http://h", 200, body, "archiver")
    refused = entry.verdict("http://h/private/x", "archiver", 2)
    assert not refused.allowed
    assert refused.reason == "robots.txt Disallow: /private/ (User-agent: *)"
    assert entry.verdict("http://h/private/open", "archiver", 2).allowed
    assert entry.verdict("http://h/", "archiver", 2).allowed


async def test_disallowed_urls_are_skipped_with_the_rule(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nDisallow: /private/\n")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/public"] == 1
    assert site.hits["/private/a"] == 0 and site.hits["/private/b"] == 0
    skipped = outcome(crawl, site.url("/private/a"))
    assert skipped["outcome"] == "skipped"
    assert skipped["reason"] == "robots.txt Disallow: /private/ (User-agent: *)"
    assert crawl.stats["skipped_robots.txt"] == 2
    assert site.hits["/robots.txt"] == 1


async def test_our_own_group_wins_over_the_star(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nDisallow: /\n\nUser-agent: archiver\nDisallow: /private/a\n")
    await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/"] == 1 and site.hits["/public"] == 1
    assert site.hits["/private/a"] == 0 and site.hits["/private/b"] == 1


async def test_missing_robots_allows_everything(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, None)
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert crawl.stats["pages"] == 4
    record = outcome(crawl, site.url("/robots.txt"))
    assert record["outcome"] == "robots" and "HTTP 404" in record["reason"]


async def test_ignore_robots_does_not_fetch_it(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nDisallow: /\n")
    crawl = await crawl_archive(site.url("/"), robots=False)
    assert site.hits["/robots.txt"] == 0
    assert crawl.stats["pages"] == 4


async def test_server_error_holds_then_skips_the_host(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, None)
    site.page("/robots.txt", "oops", status=500, content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/robots.txt"] == ROBOTS["max_tries"]
    assert site.hits["/"] == 0
    record = outcome(crawl, site.url("/"))
    assert record["outcome"] == "skipped"
    assert "robots.txt unavailable, host skipped" in record["reason"]
    assert "HTTP 500" in record["reason"]


async def test_server_error_then_recovery(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, None)
    answers = iter([503, 200])

    async def robots(request: web.Request) -> web.StreamResponse:
        if next(answers, 200) == 503:
            return web.Response(status=503, headers={"Retry-After": "0"})
        return web.Response(text="User-agent: *\nDisallow: /private/\n", content_type="text/plain")

    site.handler("/robots.txt", robots)
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/robots.txt"] == 2
    assert site.hits["/public"] == 1 and site.hits["/private/a"] == 0
    assert crawl.stats["pages"] == 2


async def test_unreachable_host_is_retried_then_the_root_fails(
    tmp_path: Path, crawl_archive: CrawlFn
) -> None:
    # Nothing listens on this port: the connection is refused at once.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(SeedError, match="host unreachable"):
        await crawl_archive(f"http://127.0.0.1:{port}/", **ROBOTS)
    lines = (tmp_path / "archive" / "crawl-log.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    root = next(r for r in records if r["url"] == f"http://127.0.0.1:{port}/")
    assert root["outcome"] == "failed" and "unreachable" in root["error"]


async def test_redirect_loop_counts_as_missing(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, None)
    site.redirect("/robots.txt", "/robots-b.txt")
    site.redirect("/robots-b.txt", "/robots.txt")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert crawl.stats["pages"] == 4
    assert site.hits["/robots.txt"] + site.hits["/robots-b.txt"] == 6
    record = outcome(crawl, site.url("/robots.txt"))
    assert "redirects" in record["reason"]


async def test_redirect_is_followed(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, None)
    site.redirect("/robots.txt", "/real-robots.txt")
    site.page("/real-robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/private/a"] == 0
    assert crawl.stats["pages"] == 2


async def test_huge_robots_is_read_up_to_the_cap(site: Site, crawl_archive: CrawlFn) -> None:
    body = "User-agent: *\nDisallow: /private/\n" + "# filler\n" * (ROBOTS_MAX_SIZE // 4)
    small_site(site, body + "Disallow: /public\n")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert site.hits["/private/a"] == 0
    assert site.hits["/public"] == 1  # the rule past the cap is not read
    assert "only the first" in outcome(crawl, site.url("/robots.txt"))["reason"]


async def test_malformed_robots_allows_everything(site: Site, crawl_archive: CrawlFn) -> None:
    garbage = bytes(range(256)) * 64 + b"\nDisallow /nocolon\nUser-agent\n:::\n"
    small_site(site, None)
    site.page("/robots.txt", garbage, content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), **ROBOTS)
    assert crawl.stats["pages"] == 4


async def test_crawl_delay_is_honoured_when_delay_is_auto(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nCrawl-delay: 0.3\n")
    loop = asyncio.get_running_loop()
    started = loop.time()
    crawl = await crawl_archive(site.url("/"), **ROBOTS, delay=-1)
    # robots.txt, the root 0.25 s (the default gap) later, then three pages 0.3 s apart
    assert loop.time() - started >= 0.25 + 3 * 0.3 - 0.05
    assert "Crawl-delay 0.3 s" in outcome(crawl, site.url("/robots.txt"))["reason"]


async def test_user_delay_wins_over_crawl_delay(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nCrawl-delay: 30\n")
    crawl = await crawl_archive(site.url("/"), **ROBOTS, delay=0)
    assert crawl.stats["pages"] == 4
    assert "not used (delay set by the user)" in outcome(crawl, site.url("/robots.txt"))["reason"]


async def test_robots_is_archived_and_saved_for_why(site: Site, crawl_archive: CrawlFn) -> None:
    small_site(site, "User-agent: *\nDisallow: /private/\n")
    seen: list[str] = []

    class Collector:
        @hookimpl
        def page_fetched(self, page: Page, links: Sequence[Link]) -> None:
            seen.append(page.url)

    crawl = await crawl_archive(site.url("/"), extra=[Collector()], **ROBOTS)
    assert site.url("/robots.txt") in seen
    assert crawl.stats["robots_fetched"] == 1
    saved = saved_robots(crawl.archive, "archiver")
    entry = saved[origin_of(site.url("/"))]
    assert isinstance(entry, RobotsEntry)
    assert not entry.verdict(site.url("/private/x"), "archiver", 2).allowed
