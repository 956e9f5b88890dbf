"""A site crawled twice with pages changed in between, and a hand-written update crawl.

Crawl 1 sees `/`, `/same`, `/edited`, `/gone` and `/dropped`; before crawl 2 (``--recrawl``)
`/edited` gets new text, `/gone` answers 404, `/` stops linking `/dropped` and links a
new page `/fresh`.  `add_not_modified_crawl` appends a third crawl written with warcio
the way the warc plugin writes records: a server-not-modified revisit for `/same` and
a new response for `/edited`.
"""

from __future__ import annotations

import asyncio
import io
import time
from datetime import UTC, datetime
from pathlib import Path

from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc, write_cdxj
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from archiver.cli import main
from archiver.history import record_finish, record_start
from archiver.testing import Site

NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

FIRST = {
    "/": '<title>Home</title><p>Welcome.</p><a href="/same">same</a> <a href="/edited">edited</a>'
    ' <a href="/gone">gone</a> <a href="/dropped">dropped</a>',
    "/same": "<title>Same</title><p>Nothing ever changes here.</p>",
    "/edited": "<title>Edited</title><p>The first draft.</p><p>A line that stays.</p>",
    "/gone": "<title>Gone</title><p>Soon deleted.</p>",
    "/dropped": "<title>Dropped</title><p>Soon unlinked.</p>",
}
SECOND = {
    "/": '<title>Home</title><p>Welcome back.</p><a href="/same">same</a> <a href="/edited">edited</a>'
    ' <a href="/gone">gone</a> <a href="/fresh">fresh</a>',
    "/same": FIRST["/same"],
    "/edited": "<title>Edited</title><p>The second draft.</p><p>A line that stays.</p>",
    "/fresh": "<title>Fresh</title><p>A new page.</p>",
    "/dropped": FIRST["/dropped"],
}


def serve(site: Site, pages: dict[str, str]) -> None:
    site.handlers.clear()
    for path, body in pages.items():
        site.page(path, body)


async def crawl(site: Site, archive: Path, *extra: str) -> None:
    args = ["crawl", site.url("/"), "-o", str(archive), "-q", "--delay", "0", "--ignore-robots", *extra]
    assert await asyncio.to_thread(main, [*args, "--disable-plugin", "index"]) == 0


async def next_second() -> None:
    """CDXJ dates are whole seconds: two crawls must not share one."""
    await asyncio.sleep(1.05 - time.time() % 1)


async def crawl_twice(site: Site, archive: Path) -> None:
    serve(site, FIRST)
    await crawl(site, archive)
    await next_second()
    serve(site, SECOND)
    await crawl(site, archive, "--recrawl")


def _stored(archive: Path, url: str) -> tuple[str, str]:
    """WARC-Date and payload digest of the newest full response for `url` (what a 304 refers to)."""
    best = None
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        for capture in index_warc(path):
            if (
                capture.url == url
                and not capture.is_revisit
                and (best is None or capture.timestamp > best.timestamp)
            ):
                best = capture
    assert best is not None and best.digest, url
    moment = datetime.strptime(best.timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return str(datetime_to_iso_date(moment)), best.digest


def add_not_modified_crawl(
    archive: Path,
    base: str,
    edited: str,
    extra_urls: tuple[str, ...] = (),
    *,
    complete: bool = False,
    digest: bool = True,
) -> Path:
    """Crawl 3 as an update writes it: `/same` answered 304, `/edited` a new body.

    `extra_urls` get a fresh response each (hostile URLs for the escaping tests).  The
    crawl is recorded as finished, `complete` or not (then the pages it did not reach
    are not claimed to be gone).  The revisit carries the stored capture's payload digest, as
    `crawl --update` writes it; without `digest` (as other tools may write it) a reader
    has only its ``WARC-Refers-To-*`` headers to find the body.
    Returns the WARC file written, indexed beside it as the warc plugin does.
    """
    moment = datetime.now(UTC)
    run = record_start(archive, "update", moment)
    warc_date = str(datetime_to_iso_date(moment.replace(tzinfo=None), use_micros=True))
    path = archive / "warc" / f"update-{moment:%Y%m%d%H%M%S}.warc.gz"
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="WARC/1.1")
        same = base + "/same"
        head = StatusAndHeaders("304 Not Modified", [("ETag", '"v1"')], protocol="HTTP/1.1")
        stored_date, stored_digest = _stored(archive, same)
        fields = {
            "WARC-Date": warc_date,
            "WARC-Profile": NOT_MODIFIED,
            "WARC-Refers-To-Target-URI": same,
            "WARC-Refers-To-Date": stored_date,
        }
        if digest:
            fields["WARC-Payload-Digest"] = stored_digest
        revisit = writer.create_warc_record(same, "revisit", http_headers=head, warc_headers_dict=fields)
        writer.write_record(revisit)
        for url, body in ((base + "/edited", edited), *((u, "<p>hostile</p>") for u in extra_urls)):
            data = body.encode()
            headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(data)))]
            response = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(data),
                length=len(data),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": warc_date},
            )
            writer.write_record(response)
    write_cdxj(cdxj_path_for(path), index_warc(path))
    record_finish(archive, run.number, datetime.now(UTC), complete=complete)
    return path
