"""``crawl --update``: conditional requests, server-not-modified revisits, and what an update leaves.

The sites are real aiohttp servers on 127.0.0.1 that answer conditional requests as the
page asks: a strong ETag, a weak one, Last-Modified only, no validator, a server that
ignores conditionals, one that lies (304 to anything).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.mirror.export import ExportOptions, export_mirror
from archiver_plugins.replay.app import make_app
from archiver_plugins.warc.verify import verify_file
from warcio.archiveiterator import ArchiveIterator

from archiver.history import read_history
from archiver.hookspecs import hookimpl
from archiver.manager import make_plugin_manager
from archiver.model import Crawl, Link, Page
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
LAST_MODIFIED = "Tue, 03 Nov 2026 10:00:00 GMT"


@dataclass
class Doc:
    """One page of a `ConditionalSite` and how its server answers conditional requests."""

    body: str
    validator: str = "etag"
    """'etag', 'weak', 'modified' (Last-Modified only), 'none', 'ignore' (validators sent,
    conditionals ignored) or 'liar' (no validators, and 304 to any request once `lying`)."""
    status: int = 200


@dataclass
class ConditionalSite:
    site: Site
    docs: dict[str, Doc] = field(default_factory=dict)
    requests: dict[str, list[dict[str, str]]] = field(default_factory=lambda: collections.defaultdict(list))
    lying: bool = False

    def page(self, path: str, text: str, links: Iterable[str] = (), validator: str = "etag") -> None:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = f"<html><head><title>{path}</title></head><body><p>{text}</p>{anchors}</body></html>"
        self.docs[path] = Doc(body, validator)
        self.site.handler(path, self._serve)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        doc = self.docs.get(request.path)
        self.requests[request.path].append(dict(request.headers))
        if doc is None or doc.status != 200:
            return web.Response(status=doc.status if doc else 404, text="gone")
        tag = '"' + hashlib.sha1(doc.body.encode()).hexdigest()[:16] + '"'
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if doc.validator in ("etag", "ignore", "liar"):
            headers["ETag"] = tag
        elif doc.validator == "weak":
            headers["ETag"] = "W/" + tag
        elif doc.validator == "modified":
            headers["Last-Modified"] = LAST_MODIFIED
        if doc.validator == "liar":  # no validator ever, and 304 to anything once lying
            del headers["ETag"]
            if self.lying:
                return web.Response(status=304)
        if doc.validator != "ignore":
            if "ETag" in headers:
                unchanged = request.headers.get("If-None-Match") == headers["ETag"]
            else:
                unchanged = request.headers.get("If-Modified-Since") == headers.get("Last-Modified", "-")
            if unchanged:
                kept = {k: v for k, v in headers.items() if k != "Content-Type"}
                return web.Response(status=304, headers=kept)
        return web.Response(body=doc.body.encode(), headers=headers)


@pytest.fixture
def csite(site: Site) -> ConditionalSite:
    return ConditionalSite(site)


async def crawl_into(
    archive: Path, root: str, mode: str = "crawl", plugins: Iterable[str] = ("links", "warc"), **options: Any
) -> Crawl:
    config = make_config(archive.parent, [root], output=str(archive), max_tasks=2, **options)
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in plugins])
    return await run_crawl(config, pm, mode=mode)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Record:
    type: str
    url: str
    date: str
    id: str
    status: int | None
    headers: dict[str, str]
    http: dict[str, str]
    body: bytes


def records(archive: Path) -> list[Record]:
    """Every response and revisit record of the archive, in file order."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "revisit"):
                    continue
                http = record.http_headers
                found.append(
                    Record(
                        type=record.rec_type,
                        url=record.rec_headers.get_header("WARC-Target-URI"),
                        date=record.rec_headers.get_header("WARC-Date"),
                        id=record.rec_headers.get_header("WARC-Record-ID"),
                        status=int(http.get_statuscode()) if http else None,
                        headers=dict(record.rec_headers.headers),
                        http=dict(http.headers) if http else {},
                        body=record.content_stream().read(),
                    )
                )
    return found


def since(found: list[Record], crawl: Crawl) -> dict[str, Record]:
    """The records a crawl wrote, by URL."""
    start = crawl.started_at.strftime("%Y-%m-%dT%H:%M:%S")
    return {r.url: r for r in found if r.date >= start}


async def test_update_asks_with_validators_and_stores_not_modified_revisits(
    csite: ConditionalSite, tmp_path: Path
) -> None:
    csite.page("/", "home", ["/strong", "/modified", "/none", "/weak", "/ignore"])
    csite.page("/strong", "strong etag", ["/deep"])
    csite.page("/modified", "last modified only", validator="modified")
    csite.page("/none", "no validator", validator="none")
    csite.page("/weak", "weak etag", validator="weak")
    csite.page("/ignore", "ignores conditionals", validator="ignore")
    csite.page("/deep", "reached only through an unchanged page")
    url = csite.site.url
    archive = tmp_path / "a"
    first = await crawl_into(archive, url("/"), frontier="sqlite")
    assert first.complete and first.number == 1
    originals = {r.url: r for r in records(archive)}
    assert all(r.type == "response" for r in originals.values())

    update = await crawl_into(archive, url("/"), mode="update", frontier="memory")
    assert update.number == 2 and update.mode == "update" and update.complete

    asked = {path: reqs[-1] for path, reqs in csite.requests.items()}
    assert asked["/"]["If-None-Match"] == originals[url("/")].http["ETag"]
    assert "If-Modified-Since" not in asked["/"]
    assert asked["/modified"]["If-Modified-Since"] == LAST_MODIFIED
    assert "If-None-Match" not in asked["/modified"]
    assert asked["/weak"]["If-None-Match"].startswith('W/"')  # sent as it came
    assert "If-None-Match" not in asked["/none"] and "If-Modified-Since" not in asked["/none"]
    assert len(csite.requests["/deep"]) == 2  # reached again through /strong's stored links

    written = since(records(archive), update)
    for path in ("/", "/strong", "/modified", "/weak", "/deep"):
        record = written[url(path)]
        original = originals[url(path)]
        assert record.type == "revisit" and record.status == 304, path
        assert record.headers["WARC-Profile"] == NOT_MODIFIED
        assert record.headers["WARC-Refers-To-Target-URI"] == original.url
        assert record.headers["WARC-Refers-To-Date"] == original.date
        assert record.headers["WARC-Refers-To"] == original.id
        assert record.headers["WARC-Payload-Digest"] == original.headers["WARC-Payload-Digest"]
        assert record.body == b""  # the 304's headers only
    for path in ("/none", "/ignore"):  # fetched in full, same payload: as any duplicate
        assert written[url(path)].type == "revisit"
        assert written[url(path)].headers["WARC-Profile"] == IDENTICAL
    assert update.stats["not_modified"] == 5
    assert json.loads((archive / "report.json").read_text())["not_modified"] == 5
    log = [json.loads(line) for line in (archive / "crawl-log.jsonl").read_text().splitlines()]
    outcomes = collections.Counter(r["outcome"] for r in log)
    assert outcomes["not_modified"] == 5
    runs = read_history(archive)
    assert [(r.number, r.mode, r.complete) for r in runs] == [(1, "crawl", True), (2, "update", True)]
    for path in (archive / "warc").glob("*.warc.gz"):
        report = verify_file(path)
        assert report.ok, [str(fault) for fault in report.faults]


async def test_changed_added_and_removed_pages_between_two_crawls(
    csite: ConditionalSite, tmp_path: Path
) -> None:
    csite.page("/", "home", ["/same", "/changed", "/gone"])
    csite.page("/same", "stays as it was", validator="modified")
    csite.page("/changed", "first version")
    csite.page("/gone", "soon removed")
    url = csite.site.url
    archive = tmp_path / "a"
    plugins = ("links", "warc", "index")
    first = await crawl_into(archive, url("/"), plugins=plugins)
    assert first.stats["index.queued"] == 4
    out = tmp_path / "mirror"
    exported = await asyncio.to_thread(export_mirror, archive, out, ExportOptions())
    host = out / csite.site.host.replace(":", "+")
    inodes = {p: p.stat().st_ino for p in host.rglob("*") if p.is_file()}  # a rewrite makes a new one

    csite.page("/", "home, with a new page", ["/same", "/changed", "/gone", "/new"])
    csite.page("/changed", "second version")
    csite.page("/new", "added since")
    csite.docs["/gone"].status = 404
    update = await crawl_into(archive, url("/"), mode="update", plugins=plugins)

    written = since(records(archive), update)
    assert {path: (written[url(path)].type, written[url(path)].status) for path in csite.docs} == {
        "/": ("response", 200),
        "/same": ("revisit", 304),
        "/changed": ("response", 200),
        "/gone": ("response", 404),
        "/new": ("response", 200),
    }
    assert b"second version" in written[url("/changed")].body
    assert update.stats["index.queued"] == 3  # /, /changed, /new: the unchanged page is not indexed again

    again = await asyncio.to_thread(export_mirror, archive, out, ExportOptions())
    changed = {p.name for p, inode in inodes.items() if p.exists() and p.stat().st_ino != inode}
    assert {"index.html", "changed.html"} <= changed and "same.html" not in changed
    assert (host / "new.html").is_file() and "second version" in (host / "changed.html").read_text()
    assert again.written < exported.written + 2

    async with TestClient(TestServer(make_app([archive]), host="127.0.0.1")) as client:
        for path, text in (("/same", "stays as it was"), ("/changed", "second version"), ("/new", "added")):
            response = await client.get(f"/replay/29991231235959id_/{url(path)}")
            assert response.status == 200, path
            assert text in await response.text(), path


async def test_liars_are_recorded_as_they_answer_and_lead_nowhere(
    csite: ConditionalSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    csite.page("/", "home", ["/liar"])
    csite.page("/liar", "answers 304 to anything", ["/behind"], validator="liar")
    csite.page("/behind", "only linked from the liar")
    url = csite.site.url
    archive = tmp_path / "a"
    await crawl_into(archive, url("/"))
    csite.page("/", "home, changed", ["/liar", "/fresh"])
    csite.page("/fresh", "never stored", ["/behind-fresh"], validator="liar")
    csite.page("/behind-fresh", "only linked from a page never stored")
    csite.lying = True
    with caplog.at_level(logging.WARNING):
        update = await crawl_into(archive, url("/"), mode="update")
    written = since(records(archive), update)
    for path in ("/liar", "/fresh"):
        assert written[url(path)].type == "response" and written[url(path)].status == 304
        assert "without a validator" in caplog.text and url(path) in caplog.text
    assert "/behind-fresh" not in csite.requests and len(csite.requests["/behind"]) == 1
    assert update.stats["not_modified"] == 0


class Recorder:
    """Keeps what `page_fetched` saw."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[Page, list[Link]]] = {}

    @hookimpl
    def page_fetched(self, page: Page, links: list[Link], crawl: Crawl) -> None:
        self.pages[page.url] = (page, list(links))


async def test_hook_stored_page_gives_a_304_its_links(site: Site, tmp_path: Path) -> None:
    async def conditional(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(text="changed", content_type="text/html")

    site.handler("/", conditional)
    site.page("/linked")
    stored_body = f'<a href="{site.url("/linked")}">x</a>'.encode()

    class Stored:
        @hookimpl
        def prepare_request(self, url: str, headers: dict[str, str], crawl: Crawl) -> None:
            if url.endswith("/") and crawl.mode == "update":
                headers["If-None-Match"] = '"v1"'

        @hookimpl
        async def stored_page(self, url: str, crawl: Crawl) -> Page | None:
            headers = (("Content-Type", "text/html"),)
            return Page(url=url, status=200, headers=headers, body=stored_body) if url.endswith("/") else None

    recorder = Recorder()
    config = make_config(tmp_path, [site.url("/")])
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links"], plugins=[Stored(), recorder])
    crawl = await run_crawl(config, pm, mode="update")
    page, links = recorder.pages[site.url("/")]
    assert page.status == 304 and page.unchanged and page.body == b""
    assert [link.url for link in links] == [site.url("/linked")]
    assert site.hits["/linked"] == 1 and crawl.stats["not_modified"] == 1


async def test_hook_same_as_stored_marks_a_page_unchanged(site: Site, tmp_path: Path) -> None:
    site.page("/", links=["/other"])
    site.page("/other")

    class Same:
        @hookimpl
        def same_as_stored(self, page: Page, crawl: Crawl) -> bool | None:
            return True if page.url.endswith("/other") else None

    recorder = Recorder()
    config = make_config(tmp_path, [site.url("/")])
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links"], plugins=[Same(), recorder])
    await run_crawl(config, pm, mode="update")
    assert recorder.pages[site.url("/other")][0].unchanged
    assert not recorder.pages[site.url("/")][0].unchanged
    recorder.pages.clear()
    await run_crawl(config, pm, mode="crawl")  # asked in an update only
    assert not recorder.pages[site.url("/other")][0].unchanged


def test_an_archive_without_history_numbers_its_earlier_crawl_first(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from archiver.history import record_start

    reported = tmp_path / "reported"
    reported.mkdir()
    started, finished = "2026-01-02T03:04:05+00:00", "2026-01-02T04:00:00+00:00"
    report = {"started_at": started, "finished_at": finished, "complete": True}
    (reported / "report.json").write_text(json.dumps(report))
    now = datetime.now(UTC)
    assert record_start(reported, "update", now).number == 2
    runs = read_history(reported)
    assert [(r.number, r.mode, r.started.isoformat(), r.complete) for r in runs] == [
        (1, "crawl", started, True),
        (2, "update", now.isoformat(), False),
    ]

    killed = tmp_path / "killed"  # a crawl killed before it wrote its report: dated by its oldest file
    (killed / "warc").mkdir(parents=True)
    (killed / "warc" / "x.warc.gz").write_bytes(b"")
    os.utime(killed / "warc" / "x.warc.gz", (1_700_000_000, 1_700_000_000))
    record_start(killed, "recrawl", now)
    first, second = read_history(killed)
    assert (first.number, first.complete, first.started.timestamp()) == (1, False, 1_700_000_000)
    assert second.mode == "recrawl" and second.started > first.started

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert record_start(fresh, "crawl", now).number == 1 and len(read_history(fresh)) == 1
