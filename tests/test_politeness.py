"""Per-host manners, Retry-After, the adaptive throttle, the address guard and trap rules."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from aiohttp import web

from archiver.config import load_config
from archiver.guard import LINK_LOCAL, LOOPBACK, PRIVATE, PUBLIC, SPECIAL, AddressGuard, address_class
from archiver.model import Crawl
from archiver.politeness import DEFAULT_DELAY, HostLimiter, delay_for_host, next_start, retry_after_seconds
from archiver.testing import CrawlFn, Site
from archiver.traps import TrapDetector, repeated_segment


def records(crawl: Crawl) -> dict[str, dict[str, Any]]:
    lines = (crawl.archive / "crawl-log.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["url"]: r for r in map(json.loads, lines)}


# -- Retry-After ------------------------------------------------------------------------


def test_retry_after_seconds_and_dates() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after_seconds(format_datetime(now - timedelta(days=1), usegmt=True), now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("") is None
    assert retry_after_seconds(None) is None


async def test_503_retry_after_date_is_capped(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/busy"])
    answers = iter([503, 503, 200])

    async def busy(request: web.Request) -> web.StreamResponse:
        if next(answers, 200) == 503:
            later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
            return web.Response(status=503, headers={"Retry-After": later})
        return web.Response(text="ok", content_type="text/html")

    site.handler("/busy", busy)
    loop = asyncio.get_running_loop()
    started = loop.time()
    crawl = await crawl_archive(site.url("/"), max_tries=3, retry_after_max=0.2)
    assert loop.time() - started < 5
    assert records(crawl)[site.url("/busy")]["status"] == 200
    assert crawl.stats["retry_status_503"] == 2


async def test_429_that_never_ends_is_kept_with_a_reason(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/busy"])
    site.page("/busy", "slow down", status=429, headers={"Retry-After": "0"})
    crawl = await crawl_archive(site.url("/"), max_tries=3)
    record = records(crawl)[site.url("/busy")]
    assert (record["status"], record["tries"]) == (429, 3)
    assert "HTTP 429 after 3 tries" in record["reason"]
    assert site.hits["/busy"] == 3


# -- concurrency, delay, throttle -------------------------------------------------------


async def test_per_host_concurrency_is_a_ceiling(site: Site, crawl_archive: CrawlFn) -> None:
    paths = [f"/p{n}" for n in range(12)]
    site.page("/", links=paths)

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.05)
        return web.Response(text="ok", content_type="text/html")

    for path in paths:
        site.handler(path, slow)
    await crawl_archive(site.url("/"), per_host_concurrency=2, max_tasks=10)
    assert site.max_in_flight == 2


async def test_delay_spaces_requests(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a", "/b"])
    site.page("/a", "a")
    site.page("/b", "b")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await crawl_archive(site.url("/"), delay=0.2)
    assert loop.time() - started >= 0.4


def test_default_delay_is_polite() -> None:
    config = load_config(None, {})
    assert config.delay < 0 and config.per_host_concurrency == 4
    limiter = HostLimiter(config)
    assert limiter.host_delay("http://example.org/") == DEFAULT_DELAY
    assert limiter.set_crawl_delay("http://example.org/", 2.0)
    assert limiter.host_delay("http://example.org/x") == 2.0
    user = HostLimiter(config.replace(delay=0.0))
    assert not user.set_crawl_delay("http://example.org/", 2.0)
    assert user.host_delay("http://example.org/") == 0.0


def test_adaptive_throttle_follows_latency() -> None:
    limiter = HostLimiter(load_config(None, {"delay": 0.0, "adaptive_throttle": True}))
    url = "http://example.org/"
    limiter.observe(url, 1.0, 200)
    assert limiter.host_delay(url) == 1.0
    limiter.observe(url, 3.0, 200)
    assert limiter.host_delay(url) == 2.0
    limiter.observe(url, 0.0, 500)  # a fast error does not speed the crawl up
    assert limiter.host_delay(url) == 2.0
    limiter.observe(url, 0.0, 200)
    assert limiter.host_delay(url) == 1.0
    limiter.observe(url, 10_000.0, 200)
    assert limiter.host_delay(url) == limiter.max_delay
    off = HostLimiter(load_config(None, {"delay": 0.0}))
    off.observe(url, 5.0, 200)
    assert off.host_delay(url) == 0.0


# -- the address guard ------------------------------------------------------------------


def test_address_classes() -> None:
    def kind(text: str) -> str:
        return address_class(ipaddress.ip_address(text))

    assert kind("93.184.216.34") == PUBLIC
    assert kind("127.0.0.2") == LOOPBACK
    assert kind("::1") == LOOPBACK
    assert kind("::ffff:127.0.0.1") == LOOPBACK
    assert kind("10.1.2.3") == PRIVATE
    assert kind("192.168.1.1") == PRIVATE
    assert kind("100.64.0.1") == PRIVATE
    assert kind("fd00::1") == PRIVATE
    assert kind("169.254.169.254") == LINK_LOCAL
    assert kind("fe80::1") == LINK_LOCAL
    assert kind("0.0.0.0") == SPECIAL


def test_public_root_may_not_reach_private_addresses() -> None:
    guard = AddressGuard(["http://93.184.216.34/"])
    assert guard.url_refusal("http://93.184.216.35/") is None
    assert guard.url_refusal("http://example.org/") is None  # names are checked when resolved
    refused = guard.url_refusal("http://127.0.0.1:8080/admin")
    assert refused is not None and "loopback" in refused
    assert guard.address_refusal("rebound.example", "10.0.0.7") is not None
    assert guard.address_refusal("93.184.216.34", "93.184.216.34") is None  # a root itself
    assert AddressGuard(["http://93.184.216.34/"], allow_all=True).url_refusal("http://10.0.0.1/") is None


def test_loopback_root_may_reach_loopback_only() -> None:
    guard = AddressGuard(["http://127.0.0.1:8000/"])
    assert guard.url_refusal("http://127.0.0.1:9000/") is None
    assert guard.url_refusal("http://[::1]:9000/") is None
    assert guard.url_refusal("http://169.254.169.254/latest/meta-data/") is not None
    assert guard.url_refusal("http://10.0.0.1/") is not None
    assert guard.url_refusal("http://0.0.0.0:8000/") is not None


async def test_redirects_into_link_local_space_are_refused(site: Site, crawl_archive: CrawlFn) -> None:
    # Requisites may come from any host, so only the guard stands between them and a
    # metadata service.
    site.page("/", '<a href="/good">g</a><img src="/meta"><img src="/hex">')
    site.page("/good", "fine")
    site.redirect("/meta", "http://169.254.169.254/latest/meta-data/")
    # 0xa9fea9fe is 169.254.169.254 written as a host name: the URL parser reads it as the
    # address it is (as a browser and the resolver would), so the guard sees the address.
    site.redirect("/hex", "http://0xa9fea9fe:9/latest/meta-data/")
    crawl = await crawl_archive(site.url("/"), max_tries=1, connect_timeout=1.0)
    log = records(crawl)
    assert log[site.url("/good")]["status"] == 200
    literal = log["http://169.254.169.254/latest/meta-data/"]
    assert literal["outcome"] == "skipped" and "address guard" in literal["reason"]
    hexadecimal = log["http://169.254.169.254:9/latest/meta-data/"]
    assert hexadecimal["outcome"] == "skipped" and "address guard" in hexadecimal["reason"]
    assert crawl.stats["skipped_address"] == 2


async def test_a_root_redirecting_into_private_space_is_refused(site: Site, crawl_archive: CrawlFn) -> None:
    site.redirect("/", "http://10.0.0.1/")
    site.page("/other", "fine")
    crawl = await crawl_archive([site.url("/"), site.url("/other")], max_tries=1)
    log = records(crawl)
    assert "private address" in log["http://10.0.0.1/"]["reason"]
    assert log[site.url("/other")]["status"] == 200


# -- traps ------------------------------------------------------------------------------


def test_repeated_segment() -> None:
    assert repeated_segment("/a/b/a/b/a/b", 3) is None
    assert repeated_segment("/a/b/a/b/a/b/a", 3) == ("a", 4)
    assert repeated_segment("/x/x/x/x", 0) is None


def test_query_variants_and_host_budget() -> None:
    traps = TrapDetector(load_config(None, {"max_query_variants": 3, "max_pages_per_host": 5}))
    for n in range(3):
        url = f"http://h/cal?d={n}"
        assert traps.refusal(url) is None
        traps.admitted(url)
    assert traps.refusal("http://h/cal?d=1") is None  # a variant already counted
    refused = traps.refusal("http://h/cal?d=99")
    assert refused is not None and "max_query_variants" in refused
    assert traps.refusal("http://h/other?d=99") is None
    traps.admitted("http://h/a")
    traps.admitted("http://h/b")
    budget = traps.refusal("http://h/c")
    assert budget is not None and budget.startswith("budget:")
    assert traps.refusal("http://other/c") is None


def test_the_delay_is_decided_in_one_function_of_a_hosts_state() -> None:
    told = {"crawl_delay": 2.0, "latency": None, "default": 0.25, "throttle_max": 60.0}
    assert delay_for_host(user_delay=None, **told) == (2.0, "robots.txt Crawl-delay")
    assert delay_for_host(user_delay=0.5, **told) == (0.5, "set by --delay or the config")
    slow = {**told, "crawl_delay": None, "latency": 3.0}
    assert delay_for_host(user_delay=None, **slow) == (3.0, "adaptive throttle")
    assert delay_for_host(user_delay=None, **{**slow, "latency": 0.1}) == (0.25, "the default")
    assert delay_for_host(user_delay=None, **{**slow, "throttle_max": 1.0}) == (1.0, "adaptive throttle")
    assert next_start(10.0, 1.0, 0.0) == 11.0
    assert next_start(10.0, 1.0, 30.0) == 30.0  # a pause outlasts the gap
