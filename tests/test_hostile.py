"""Servers that are broken or hostile: every crawl ends, stays small, and says what happened.

Each case serves good pages beside the bad one: the good pages must be archived, the bad
URL must be in the crawl log with a readable reason, and the crawl must finish within
the small limits set here (timeouts of a second or two).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import zlib
from collections.abc import AsyncIterator
from typing import Any

import brotli
import pytest
from aiohttp import web
from rawhttp import RawSite, reset, response_head

from archiver.model import Crawl
from archiver.testing import CrawlFn, Site

FAST: dict[str, Any] = {
    "timeout": 2.0,
    "first_byte_timeout": 1.0,
    "connect_timeout": 1.0,
    "min_rate": 200,
    "rate_window": 1.0,
    "max_tries": 2,
    "max_body_size": 1024 * 1024,
    "max_decoded_size": 4 * 1024 * 1024,
}

GOOD = '<html><body><a href="/good">good</a> <a href="{bad}">bad</a></body></html>'


def log_records(crawl: Crawl) -> dict[str, dict[str, Any]]:
    """The last record of each URL in the crawl log."""
    records: dict[str, dict[str, Any]] = {}
    with (crawl.archive / "crawl-log.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            records[record["url"]] = record
    return records


def fetched_ok(records: dict[str, dict[str, Any]], url: str) -> bool:
    record = records.get(url)
    return record is not None and record.get("outcome") == "fetched" and record.get("status") == 200


@pytest.fixture
async def raw() -> AsyncIterator[RawSite]:
    server = RawSite()
    await server.start()
    yield server
    await server.close()


def raw_site_with(raw: RawSite, bad: str) -> None:
    raw.page("/", GOOD.format(bad=bad))
    raw.page("/good", "<html><body>fine</body></html>")


def html_site_with(site: Site, bad: str) -> None:
    site.page("/", GOOD.format(bad=bad))
    site.page("/good", "<html><body>fine</body></html>")


# -- connection level (raw server) ------------------------------------------------------


async def test_connection_reset_mid_body_keeps_partial(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/reset")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(response_head(headers={"Content-Type": "text/html", "Content-Length": "100000"}))
        writer.write(b"<html>" + b"x" * 5000)
        await writer.drain()
        await asyncio.sleep(0.05)
        reset(writer)
        return False

    raw.route("/reset", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/reset")]
    assert bad["truncated"] == "disconnect" or "payload" in (bad["error"] or "").lower()
    assert raw.hits["/reset"] == FAST["max_tries"]


async def test_accept_and_never_answer_times_out(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/silent")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(3600)
        return False

    raw.route("/silent", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/silent")]
    assert bad["outcome"] == "failed"
    assert "timeout" in bad["error"].lower() or "timed out" in bad["error"].lower()
    assert crawl.stats["error_timeout"] == 1


async def test_drip_fed_body_is_cut_by_min_rate(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/drip")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(response_head(headers={"Content-Type": "text/html", "Content-Length": "1000"}))
        for _ in range(1000):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.25)
        return False

    raw.route("/drip", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/drip")]
    assert bad["truncated"] == "time"
    assert "min_rate" in bad["reason"]
    assert bad["bytes"] < 20


async def test_endless_chunked_body_stops_at_max_body_size(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/endless")
    chunk = b"%x\r\n%s\r\n" % (65536, b"y" * 65536)

    async def serve(writer: asyncio.StreamWriter) -> bool:
        head = response_head(headers={"Content-Type": "text/html", "Transfer-Encoding": "chunked"})
        writer.write(head)
        while True:
            writer.write(chunk)
            await writer.drain()

    raw.route("/endless", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/endless")]
    assert bad["truncated"] == "length"
    assert bad["bytes"] == FAST["max_body_size"]
    assert "max_body_size" in bad["reason"]


async def test_content_length_too_long_keeps_partial(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/long")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(response_head(headers={"Content-Type": "text/html", "Content-Length": "1000"}))
        writer.write(b"<html>" + b"z" * 94)
        await writer.drain()
        return False

    raw.route("/long", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/long")]
    assert bad["truncated"] == "disconnect"
    assert bad["bytes"] == 100
    assert "connection lost" in bad["reason"]


async def test_content_length_too_short_does_not_poison_other_pages(
    raw: RawSite, crawl_archive: CrawlFn
) -> None:
    raw.page("/", '<a href="/short">s</a><a href="/good">g</a><a href="/after">a</a>')
    body = b"<html>" + b"TRAILING GARBAGE " * 20

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(response_head(headers={"Content-Type": "text/html", "Content-Length": "10"}))
        writer.write(body)
        await writer.drain()
        return True

    raw.route("/short", serve)
    raw.page("/good", "<html>fine</html>")
    raw.page("/after", "<html>fine too</html>")
    crawl = await crawl_archive(raw.url("/"), **FAST, max_tasks=1)
    records = log_records(crawl)
    short = records[raw.url("/short")]
    assert short["bytes"] == 10 or "status line" in short["error"]
    assert fetched_ok(records, raw.url("/good"))
    assert fetched_ok(records, raw.url("/after"))


async def test_one_megabyte_header_is_refused(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/fat")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Fat: ")
        for _ in range(16):
            writer.write(b"f" * 65536)
            await writer.drain()
        writer.write(b"\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return False

    raw.route("/fat", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    bad = records[raw.url("/fat")]
    assert bad["outcome"] == "failed"
    assert "bytes" in bad["error"] or "too long" in bad["error"].lower()
    assert crawl.stats["error_protocol"] == 1


async def test_a_megabyte_of_small_headers_is_refused(raw: RawSite, crawl_archive: CrawlFn) -> None:
    raw_site_with(raw, "/many")

    async def serve(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for n in range(40_000):
            writer.write(b"X-H%d: %s\r\n" % (n, b"v" * 16))
        writer.write(b"Content-Length: 2\r\n\r\nok")
        await writer.drain()
        return False

    raw.route("/many", serve)
    crawl = await crawl_archive(raw.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, raw.url("/good"))
    assert "header" in records[raw.url("/many")]["error"].lower()


# -- content (aiohttp server) -----------------------------------------------------------


async def test_body_over_the_limit_is_kept_truncated(site: Site, crawl_archive: CrawlFn) -> None:
    html_site_with(site, "/big")
    site.page("/big", b"<html>" + b"b" * (3 * 1024 * 1024), content_type="text/html")
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    bad = records[site.url("/big")]
    assert (bad["truncated"], bad["bytes"]) == ("length", FAST["max_body_size"])
    from warcio.archiveiterator import ArchiveIterator

    truncated = []
    for path in sorted((crawl.archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    truncated.append((uri, record.rec_headers.get_header("WARC-Truncated")))
    assert (site.url("/big"), "length") in truncated


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """64 MiB of zeros as a gzip body of about 64 KiB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(64)]
    parts.append(compressor.flush())
    return b"".join(parts)


async def test_gzip_bomb_is_not_inflated(site: Site, crawl_archive: CrawlFn, gzip_bomb: bytes) -> None:
    html_site_with(site, "/bomb")
    site.page("/bomb", gzip_bomb, content_type="text/html", headers={"Content-Encoding": "gzip"})
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    bad = records[site.url("/bomb")]
    assert bad["bytes"] == len(gzip_bomb)
    assert "decompression cap" in bad["reason"]


async def test_brotli_body_is_decoded_and_followed(site: Site, crawl_archive: CrawlFn) -> None:
    html = b'<html><a href="/good">good</a></html>'
    site.page("/", brotli.compress(html), content_type="text/html", headers={"Content-Encoding": "br"})
    site.page("/good", "<html>fine</html>")
    crawl = await crawl_archive(site.url("/"), **FAST)
    assert fetched_ok(log_records(crawl), site.url("/good"))


async def test_binary_served_as_html_is_archived_without_harm(site: Site, crawl_archive: CrawlFn) -> None:
    html_site_with(site, "/binary")
    site.page("/binary", os.urandom(256 * 1024), content_type="text/html")
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert fetched_ok(records, site.url("/binary"))


async def test_invalid_charset_still_yields_links(site: Site, crawl_archive: CrawlFn) -> None:
    body = '<html><body>caf\xe9 <a href="/good">good</a></body></html>'.encode("latin-1")
    site.page("/", body, content_type="text/html; charset=x-no-such-charset")
    site.page("/good", "<html>fine</html>")
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert records[site.url("/")]["encoding"]


async def test_hundred_thousand_links_are_capped(site: Site, crawl_archive: CrawlFn) -> None:
    links = "".join(f'<a href="/l/{n}">{n}</a>' for n in range(100_000))
    site.page("/", f'<html><body><a href="/good">good</a>{links}</body></html>')
    site.page("/good", "<html>fine</html>")
    crawl = await crawl_archive(site.url("/"), **FAST, max_links_per_page=50)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert "max_links_per_page" in records[site.url("/")]["reason"]
    assert crawl.stats["pages"] <= 51


async def test_hundred_kilobyte_url_is_skipped(site: Site, crawl_archive: CrawlFn) -> None:
    huge = "/" + "u" * 100_000
    html_site_with(site, huge)
    site.redirect("/to-huge", huge)
    site.page("/", GOOD.format(bad=huge).replace("</body>", '<a href="/to-huge">r</a></body>'))
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert "max_url_length" in records[site.url(huge)]["reason"]
    assert site.hits[huge] == 0


async def test_redirect_loop_and_long_chain_end(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", '<a href="/good">g</a><a href="/loop/a">l</a><a href="/chain/0">c</a>')
    site.page("/good", "<html>fine</html>")
    site.redirect("/loop/a", "/loop/b")
    site.redirect("/loop/b", "/loop/a")
    for n in range(50):
        site.redirect(f"/chain/{n}", f"/chain/{n + 1}")
    site.page("/chain/50", "<html>end</html>")
    crawl = await crawl_archive(site.url("/"), **FAST, max_redirect=10)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert site.hits["/loop/a"] == 1 and site.hits["/loop/b"] == 1
    assert crawl.stats["redirects_coalesced"] >= 1
    assert sum(site.hits[f"/chain/{n}"] for n in range(51)) == 11
    assert "redirect limit" in records[site.url("/chain/11")]["reason"]


async def test_redirect_to_file_and_javascript_is_refused(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", '<a href="/good">g</a><a href="/to-file">f</a><a href="/to-js">j</a>')
    site.page("/good", "<html>fine</html>")
    site.redirect("/to-file", "file:///etc/passwd")
    site.redirect("/to-js", "javascript:alert(1)")
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert "non-http" in records["file:///etc/passwd"]["reason"]
    assert "non-http" in records["javascript:alert(1)"]["reason"]


async def test_429_with_retry_after_is_honoured(site: Site, crawl_archive: CrawlFn) -> None:
    html_site_with(site, "/busy")
    answers = iter([429, 200])

    async def busy(request: web.Request) -> web.StreamResponse:
        status = next(answers, 200)
        if status == 429:
            return web.Response(status=429, headers={"Retry-After": "1"})
        return web.Response(text="<html>ok now</html>", content_type="text/html")

    site.handler("/busy", busy)
    loop = asyncio.get_running_loop()
    started = loop.time()
    crawl = await crawl_archive(site.url("/"), **FAST)
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    assert fetched_ok(records, site.url("/busy"))
    assert records[site.url("/busy")]["tries"] == 2
    assert loop.time() - started >= 1.0
    assert crawl.stats["retry_status_429"] == 1


async def test_infinite_unique_url_trap_ends(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", '<a href="/good">g</a><a href="/trap/0">t</a><a href="/cal?d=0">c</a><a href="/a/">a</a>')
    site.page("/good", "<html>fine</html>")

    async def trap(request: web.Request) -> web.StreamResponse:
        n = int(request.path.rsplit("/", 1)[1] or 0)
        html = f'<a href="/trap/{n + 1}">next</a><a href="/trap/{n + 2}">skip</a>'
        return web.Response(text=html, content_type="text/html")

    async def calendar(request: web.Request) -> web.StreamResponse:
        n = int(request.query.get("d", "0"))
        html = f'<a href="/cal?d={n + 1}">next</a><a href="/cal?d={n - 1}">prev</a>'
        return web.Response(text=html, content_type="text/html")

    async def relative(request: web.Request) -> web.StreamResponse:
        return web.Response(text='<a href="a/">deeper</a>', content_type="text/html")

    for n in range(400):
        site.handler(f"/trap/{n}", trap)
    site.handler("/cal", calendar)
    for depth in range(1, 10):
        site.handler("/a/" * depth, relative)
        site.handler("/" + "a/" * depth, relative)
    crawl = await crawl_archive(
        site.url("/"), **FAST, max_pages_per_host=60, max_query_variants=10, max_repeated_segments=3
    )
    records = log_records(crawl)
    assert fetched_ok(records, site.url("/good"))
    reasons = [r.get("reason") or "" for r in records.values() if r.get("outcome") == "skipped"]
    assert any("max_query_variants" in r for r in reasons)
    assert any("max_repeated_segments" in r for r in reasons)
    assert any("max_pages_per_host" in r for r in reasons)
    assert crawl.stats["pages"] <= 60
    assert crawl.stats["skipped_trap"] >= 2
    assert crawl.stats["skipped_budget"] >= 1


async def test_gzip_body_served_twice_compressed_is_still_archived(
    site: Site, crawl_archive: CrawlFn
) -> None:
    html = gzip.compress(gzip.compress(b'<a href="/good">g</a>'))
    site.page("/", html, content_type="text/html", headers={"Content-Encoding": "gzip, gzip"})
    site.page("/good", "<html>fine</html>")
    crawl = await crawl_archive(site.url("/"), **FAST)
    assert fetched_ok(log_records(crawl), site.url("/good"))
