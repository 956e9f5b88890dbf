"""`archiver serve`: pages, replay, safety headers, hostile input, live archives, the command."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from conftest import CrawlFn, Site
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from yarl import URL

from archiver_plugins.index.reindex import reindex
from archiver_plugins.web.app import make_app
from archiver_plugins.web.replay_view import REPLAY_CSP

PLUGINS = ("links", "warc", "index")


@asynccontextmanager
async def serving(archives: Sequence[Path], **options: Any) -> AsyncIterator[TestClient[Any, Any]]:
    client = TestClient(TestServer(make_app(archives, **options), host="127.0.0.1"))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


async def text_of(client: TestClient[Any, Any], path: str | URL, status: int = 200) -> str:
    response = await client.get(path, allow_redirects=False)
    body = await response.text()
    assert response.status == status, (path, response.status, body[:500])
    return body


def replay_of(body: str) -> str:
    """The href of the first search result."""
    match = re.search(r'class="title" href="([^"]+)"', body)
    assert match, body
    return match.group(1)


async def crawl_garden(site: Site, crawl_archive: CrawlFn, **overrides: Any) -> Path:
    site.page(
        "/",
        "<title>Orchard</title><h1>Orchard</h1><p>Apple trees and pear trees.</p>"
        '<a href="/old">old</a> <a href="/pears">pears</a> <img src="/pic.png">',
    )
    site.redirect("/old", "/apples")
    site.page("/apples", "<title>Apples</title><p>Apple varieties: russet and pippin.</p>")
    site.page("/pears", "<title>Pears</title><p>Conference pears keep well.</p>")
    site.page("/pic.png", b"\x89PNG\r\n\x1a\nnot-really", content_type="image/png")
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS, **overrides)
    return crawl.archive


# -- pages -----------------------------------------------------------------------------


async def test_search_browse_history_and_status(site: Site, crawl_archive: CrawlFn) -> None:
    archive = await crawl_garden(site, crawl_archive)
    async with serving([archive]) as client:
        home = await text_of(client, "/")
        assert 'name="q"' in home and "Search the text of every archived page" in home

        body = await text_of(client, "/search?q=apple")
        assert "2 results in" in body
        assert ">Apples</a>" in body and ">Orchard</a>" in body
        assert '<b class="match term0">' in body

        body = await text_of(client, "/search?q=russet+OR+conference")
        assert ">Apples</a>" in body and ">Pears</a>" in body and "Orchard" not in body.split("<ol")[1]

        body = await text_of(client, "/search?q=orchad")
        assert "Did you mean" in body and ">orchard</a>" in body

        body = await text_of(client, "/search?q=apple&type=application%2Fpdf")
        assert "0 results" in body
        body = await text_of(client, "/search?q=apple&from=2000-01-01&to=2000-12-31")
        assert "0 results" in body
        body = await text_of(client, "/search?q=apple&from=2000-01-01&type=text%2Fhtml")
        assert "2 results" in body
        body = await text_of(client, "/search?q=apple&site=elsewhere.example")
        assert "0 results" in body
        body = await text_of(client, "/search?q=apple&from=yesterday")
        assert "ignored the date" in body

        body = await text_of(client, "/search?q=colour%3Ared")
        assert 'class="problem"' in body

        sites = await text_of(client, "/browse")
        assert site.host in sites

        listing = await text_of(client, f"/browse?site={site.host}")
        assert "5 URLs" in listing
        assert "image/png" in listing and ">302<" in listing
        images = await text_of(client, f"/browse?site={site.host}&type=image")
        assert "1 URL" in images and "pic.png" in images
        filtered = await text_of(client, f"/browse?site={site.host}&q=pear")
        assert "1 URL" in filtered
        await text_of(client, "/browse?site=nowhere.example", status=404)

        history = await text_of(client, f"/history?url={site.url('/pears')}")
        assert "Captures" in history and "/replay/" in history and ">200<" in history
        await text_of(client, "/history?url=http://nowhere.example/", status=404)
        await text_of(client, "/history", status=400)

        status = await text_of(client, "/status")
        assert "finished" in status and "fetched" in status and site.url("/pears") in status


# -- replay ----------------------------------------------------------------------------


async def test_replay_redirects_nearest_capture_and_headers(site: Site, crawl_archive: CrawlFn) -> None:
    archive = await crawl_garden(site, crawl_archive)
    async with serving([archive]) as client:
        first = await client.get(f"/replay/2/{site.url('/')}", allow_redirects=False)
        assert first.status == 302
        exact = first.headers["Location"]
        stamp = re.match(r"/replay/(\d{14})/", exact)
        assert stamp and exact.endswith(site.url("/"))

        page = await client.get(exact, allow_redirects=False)
        body = await page.text()
        assert page.status == 200
        assert page.headers["Content-Security-Policy"] == REPLAY_CSP
        assert "sandbox allow-scripts" in REPLAY_CSP and "allow-same-origin" not in REPLAY_CSP
        assert "connect-src 'self'" in REPLAY_CSP
        assert page.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "Memento-Datetime" in page.headers
        assert 'id="archiver-banner"' in body
        assert f'href="/replay/{stamp.group(1)}/{site.url("/pears")}"' in body
        assert f'src="/replay/{stamp.group(1)}/{site.url("/pic.png")}"' in body

        moved = await client.get(f"/replay/{stamp.group(1)}/{site.url('/old')}", allow_redirects=False)
        assert moved.status == 302
        assert moved.headers["Location"] == f"/replay/{stamp.group(1)}/{site.url('/apples')}"
        followed = await client.get(f"/replay/{stamp.group(1)}/{site.url('/old')}")
        assert followed.status == 200 and "russet and pippin" in await followed.text()

        raw = await client.get(f"/replay/{stamp.group(1)}id_/{site.url('/')}")
        raw_body = await raw.text()
        assert 'href="/pears"' in raw_body and "archiver-banner" not in raw_body
        assert raw.headers["Content-Security-Policy"] == REPLAY_CSP

        framed = await text_of(client, f"/replay/{stamp.group(1)}if_/{site.url('/')}")
        assert "archiver-banner" not in framed and "/replay/" in framed

        image = await client.get(f"/replay/1999/{site.url('/pic.png')}", allow_redirects=False)
        assert image.status == 200 and await image.read() == b"\x89PNG\r\n\x1a\nnot-really"

        ui = await client.get("/")
        assert "default-src 'none'" in ui.headers["Content-Security-Policy"]
        assert ui.headers["X-Frame-Options"] == "DENY"
        assert ui.headers["X-Content-Type-Options"] == "nosniff"

        missing_page = await text_of(client, f"/replay/2/{site.url('/never')}", status=404)
        assert "Not in the archive" in missing_page and "never fetched from the live web" in missing_page
        missing_image = await client.get(f"/replay/2im_/{site.url('/nothing.png')}")
        assert missing_image.status == 400
        missing_image = await client.get(f"/replay/2id_/{site.url('/nothing.png')}")
        assert missing_image.status == 404
        assert missing_image.headers["Content-Security-Policy"] == REPLAY_CSP
        gone = await client.get(f"/missing/2/{site.url('/pears')}", allow_redirects=False)
        assert gone.status == 302  # archived after all: the missing page sends the reader there
    assert site.hits["/never"] == 0 and site.hits["/nothing.png"] == 0


@pytest.mark.parametrize(
    "path",
    [
        "/replay/abc/http://example.com/",
        "/replay/123456789012345/http://example.com/",
        "/replay/2024/",
        "/replay/2024",
        "/replay/",
        "/replay/2024zz_/http://example.com/",
        "/replay/2024/javascript:alert(1)",
        "/replay/2024/file:///etc/passwd",
        "/replay/2024/ftp://example.com/x",
        "/replay/2024/http://[::1/",
        "/replay/2024/http://example.com:99999/",
        "/replay/2024/http://",
        "/replay/2024/http://exa%20mple.com/",
        "/replay/2024/http://example.com/%00",
        "/static/../app.py",
        "/static/%2e%2e/app.py",
        "/static/..%2f..%2fetc%2fpasswd",
        "/static/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/static/",
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/missing/x/y",
        "/history?url=",
        "/browse?site=..%2f..%2fetc",
        "/search?page=-1&q=x",
        "/search?page=99999999999999999999&q=apple",
    ],
)
async def test_malformed_and_traversal_paths(tmp_path: Path, path: str) -> None:
    archive = tmp_path / "empty"
    archive.mkdir()
    async with serving([archive]) as client:
        response = await client.get(URL(path, encoded=True), allow_redirects=False)
        body = await response.text()
    assert response.status in (200, 400, 404), (path, response.status, body)
    assert "Traceback" not in body and "root:" not in body and "[project]" not in body
    if path.startswith(("/replay/", "/missing/", "/static/", "/history")):
        assert response.status in (400, 404)


async def test_raw_request_line_traversal(tmp_path: Path) -> None:
    """A request line the client library would have normalized, sent byte for byte."""
    async with serving([tmp_path]) as client:
        assert client.server.port is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
        for target in ("/static/../../../../etc/passwd", "/replay/2024/..%2f..%2fetc/passwd"):
            writer.write(
                f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n".encode()
            )
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
            body = await reader.readexactly(length)
            assert status in (400, 404), (target, head)
            assert b"root:" not in body and b"Traceback" not in body
        writer.close()
        await writer.wait_closed()


async def test_host_header_must_be_loopback(tmp_path: Path) -> None:
    """A page elsewhere cannot read the UI through DNS rebinding."""
    async with serving([tmp_path]) as client:
        ok = await client.get("/", headers={"Host": "localhost:1234"})
        assert ok.status == 200
        evil = await client.get("/", headers={"Host": "attacker.example:8480"})
        assert evil.status == 421
