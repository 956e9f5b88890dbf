"""`archiver serve`: pages, replay, safety headers, hostile input, live archives, the command."""

from __future__ import annotations

import asyncio
import html
import io
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.index.reindex import reindex
from archiver_plugins.replay.app import make_app
from archiver_plugins.replay.replay_view import INERT_CSP, REPLAY_CSP
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from yarl import URL

from archiver.testing import CrawlFn, Site

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
        assert "Last run" in status and "pages/s" in status
        received = re.search(r"<dt>received</dt><dd>([^<]*)</dd>", status)  # decimal units, as the README
        assert received is not None and re.fullmatch(r"\d+ B|\d+\.\d (kB|MB|GB)", received[1]), received


async def test_status_keeps_the_figures_of_each_run_apart(site: Site, crawl_archive: CrawlFn) -> None:
    """The queue's counts (this crawl), the crawl log's (every run) and report.json's (the last
    finished run) are three groups; while a run writes the archive, the last run's pages/s and
    wall time are not shown beside its counts."""
    archive = await crawl_garden(site, crawl_archive, frontier="sqlite")
    async with serving([archive]) as client:
        finished = await text_of(client, "/status")
        assert re.findall(r'<dl class="counts (\w+)">', finished) == ["frontier", "log", "report"]
        assert "URLs of the last crawl" in finished and "Last run" in finished
        holder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from archiver.lock import ArchiveLock;"
            " lock = ArchiveLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(60)",
            str(archive),
            stdout=subprocess.PIPE,
        )
        try:
            assert holder.stdout is not None
            assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"locked\n"
            running = await text_of(client, "/status")
        finally:
            holder.kill()
            await holder.wait()
        assert "crawling" in running and "URLs of this crawl" in running
        assert re.findall(r'<dl class="counts (\w+)">', running) == ["frontier", "log"]
        assert "pages/s" not in running


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
        assert raw.headers["Content-Security-Policy"] == INERT_CSP  # links not rewritten: no script

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
        assert missing_image.headers["Content-Security-Policy"] == INERT_CSP
        gone = await client.get(f"/missing/2/{site.url('/pears')}", allow_redirects=False)
        assert gone.status == 302  # archived after all: the missing page sends the reader there
    assert site.hits["/never"] == 0 and site.hits["/nothing.png"] == 0


async def test_a_query_not_archived_replays_its_path_by_pywbs_fuzzy_match(
    site: Site, crawl_archive: CrawlFn
) -> None:
    """A site's search form asks for `search.html?q=...`, never crawled: the archived
    `search.html` answers, the banner saying so, by pywb's rules for which queries may differ."""
    site.page(
        "/",
        '<a href="/search.html">search</a> <a href="/find?q=apple">find</a>'
        ' <a href="/dir/page">deeper</a> <script src="/app.js?v=1"></script>',
    )
    site.page("/search.html", "<title>Search</title><p>Type words to search the docs.</p>")
    site.page("/find?q=apple", "<p>Found apples.</p>")
    site.page("/dir/page", "<p>Deeper page.</p>")
    site.page("/app.js?v=1", "var loaded = 1;", content_type="text/javascript")
    archive = (await crawl_archive(site.url("/"), plugins=PLUGINS)).archive
    async with serving([archive]) as client:
        asked = site.url("/search.html?q=lambda&check_keywords=yes")
        first = await client.get(f"/replay/2/{asked}", allow_redirects=False)
        assert first.status == 302 and first.headers["Location"].endswith(asked)
        page = await client.get(first.headers["Location"], allow_redirects=False)
        body = await page.text()
        assert page.status == 200 and "Type words to search the docs." in body
        assert "Not archived as asked" in body and html.escape(asked) in body
        assert f'href="/history?url={quote(site.url("/search.html"), safe="")}"' in body

        script = await client.get(f"/replay/2id_/{site.url('/app.js?v=2')}")
        assert script.status == 200 and await script.text() == "var loaded = 1;"
        busted = await text_of(client, f"/replay/2id_/{site.url('/find?q=apple&_=1700000000')}")
        assert busted == "<p>Found apples.</p>"

        # without a file extension the query is the page: another search is not archived
        other = await text_of(client, f"/replay/2/{site.url('/find?q=pear')}", status=404)
        assert "Not in the archive" in other
        await text_of(client, f"/replay/2/{site.url('/dir?q=1')}", status=404)

        exact = await client.get(f"/replay/2/{site.url('/search.html')}")
        assert exact.status == 200 and "Not archived as asked" not in await exact.text()
    assert site.hits["/search.html"] == 1 and "/search.html?q=lambda&check_keywords=yes" not in site.hits


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


# -- hostile archived content ----------------------------------------------------------

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
EVIL_URL = 'http://evil.test/p?x="><script>alert(1)</script>'
EVIL_TYPE = f"image/x{SCRIPT}"


def write_warc(path: Path, records: Sequence[tuple[str, str, list[tuple[str, str]], bytes]]) -> None:
    """A WARC file as another tool would write it: (url, date, headers, body) per response."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, date, headers, body in records:
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)


@pytest.fixture
def hostile_archive(tmp_path: Path) -> Path:
    archive = tmp_path / "hostile"
    page = (
        f"<html><head><title>&lt;script&gt;alert(1)&lt;/script&gt; zebra {IMG.replace('<', '&lt;')}</title>"
        f"</head><body><p>zebra {IMG.replace('<', '&lt;')} and {SCRIPT.replace('<', '&lt;')}</p>"
        f'<img src="/pic.png"></body></html>'
    ).encode()
    write_warc(
        archive / "warc" / "hostile.warc.gz",
        [
            (EVIL_URL, "2024-05-01T10:00:00Z", [("Content-Type", "text/html; charset=utf-8")], page),
            (
                "http://evil.test/pic.png",
                "2024-05-01T10:00:01Z",
                [("Content-Type", EVIL_TYPE), ("Content-Language", f'en"{SCRIPT}')],
                b"GIF89a",
            ),
        ],
    )
    reindex(archive)
    return archive


def assert_escaped(body: str) -> None:
    assert "<script>alert" not in body, body
    assert "<img src=x" not in body, body
    assert "onerror=alert(2)>" not in body or "&lt;img src=x onerror=alert(2)&gt;" in body


async def test_browse_lists_no_site_for_renderings_or_tool_records(tmp_path: Path) -> None:
    """A --browser crawl's urn:dom:/urn:screenshot: records and wget's metadata:// log are no
    site: the page they render links them instead."""
    archive = tmp_path / "rendered"
    page = b"<html><head><title>garden</title></head><body>tulip</body></html>"
    write_warc(
        archive / "warc" / "garden.warc.gz",
        [("http://garden.test/", "2024-05-01T10:00:00Z", [("Content-Type", "text/html")], page)],
    )
    with (archive / "warc" / "garden.warc.gz").open("ab") as handle:
        writer = WARCWriter(handle, gzip=True)
        for uri, kind, mime, body in (
            ("urn:dom:http://garden.test/", "resource", "text/html", b"<p>tulip, rendered</p>"),
            ("urn:screenshot:http://garden.test/", "resource", "image/png", b"\x89PNG"),
            ("metadata://gnu.org/software/wget/warc/wget.log", "metadata", "text/plain", b"log"),
        ):
            record = writer.create_warc_record(
                uri,
                kind,
                payload=io.BytesIO(body),
                length=len(body),
                warc_content_type=mime,
                warc_headers_dict={"WARC-Date": "2024-05-01T10:00:02Z"},
            )
            writer.write_record(record)
    reindex(archive)
    async with serving([archive]) as client:
        sites = await text_of(client, "/browse")
        assert "garden.test" in sites and "site=-" not in sites and "metadata" not in sites, sites
        listing = await text_of(client, "/browse?site=garden.test")
        assert "urn:" not in listing and "1 URL" in listing, listing
        rendered = "/rendered/dom/20240501100002/http://garden.test/"
        assert f'href="{rendered}">as rendered</a>' in listing, listing
        assert "tulip, rendered" in await text_of(client, rendered)


async def test_archived_strings_are_escaped_everywhere(hostile_archive: Path) -> None:
    async with serving([hostile_archive]) as client:
        results = await text_of(client, "/search?q=zebra")
        assert "1 result" in results
        assert_escaped(results)
        assert "&lt;script&gt;alert(1)&lt;/script&gt; zebra" in results  # the title, shown as text
        assert "&lt;img src=x onerror=alert(2)&gt;" in results  # the snippet
        assert "&#34;&gt;&lt;script&gt;" in results or "&quot;&gt;&lt;script&gt;" in results  # the URL

        sites = await text_of(client, "/browse")
        assert "evil.test" in sites
        listing = await text_of(client, "/browse?site=evil.test")
        assert_escaped(listing)
        assert "image/x&lt;script&gt;" in listing

        history = await text_of(client, "/history?" + urlencode({"url": EVIL_URL}))
        assert_escaped(history)
        assert "1 URL" not in history and "/replay/20240501100000/" in history

        reflected = await text_of(client, f"/history?url={SCRIPT}", status=404)
        assert_escaped(reflected)
        missing = await text_of(
            client, URL(f"/missing/2024/http://x.test/{SCRIPT}", encoded=True), status=404
        )
        assert_escaped(missing)
        bad = await client.get(URL(f"/replay/{SCRIPT}/http://x.test/", encoded=True))
        assert bad.status == 400
        assert_escaped(await bad.text())

        target = URL(
            "/replay/20240501100000/" + EVIL_URL.replace('"', "%22").replace("<", "%3C").replace(">", "%3E"),
            encoded=True,
        )
        page = await client.get(target)
        body = await page.text()
        assert page.status == 200
        start = body.index('<div id="archiver-banner"')
        banner = body[start : body.index("</div>", start)]
        assert "<script>" not in banner
        assert "x=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in banner  # the URL as archived
        assert page.headers["Content-Security-Policy"] == REPLAY_CSP

        image = await client.get("/replay/20240501100001/http://evil.test/pic.png")
        assert image.status == 200
        assert image.headers["Content-Security-Policy"] == INERT_CSP
        assert "Content-Language" in image.headers


# -- archives that change, several archives, the command -------------------------------


async def test_follows_a_crawl_in_progress(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(text="<title>Late</title><p>finally here</p>", content_type="text/html")

    site.page("/", '<title>Start</title><p>first page</p><a href="/slow">slow</a>')
    site.handler("/slow", slow)
    archive = tmp_path / "archive"
    archive.mkdir()
    async with serving([archive], refresh_seconds=0) as client:
        assert "Nothing archived yet" in await text_of(client, "/browse")
        crawl = asyncio.create_task(crawl_archive(site.url("/"), plugins=PLUGINS))
        try:
            for _ in range(200):
                if site.hits["/slow"]:
                    break
                await asyncio.sleep(0.02)
            assert site.hits["/slow"] == 1
            status = await text_of(client, "/status")
            assert "crawling" in status and 'http-equiv="refresh"' in status
            listing = await text_of(client, f"/browse?site={site.host}")
            assert "1 URL" in listing and "/slow" not in listing
            await text_of(client, f"/replay/2/{site.url('/slow')}", status=404)
            first = await client.get(f"/replay/2/{site.url('/')}")
            body = await first.text()
            assert first.status == 200 and "first page" in body
            assert "/missing/" in body  # /slow is not archived yet
        finally:
            release.set()
            await crawl
        listing = await text_of(client, f"/browse?site={site.host}")
        assert "2 URLs" in listing
        late = await client.get(f"/replay/2/{site.url('/slow')}")
        assert late.status == 200 and "finally here" in await late.text()
        assert "crawling" not in await text_of(client, "/status")


async def test_several_archives(site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    site.page("/", "<title>Apple pie with raisins</title><h1>Cinnamon</h1><p>apple pie with cinnamon</p>")
    other_site.page("/", "<title>Apple tart</title><p>apple tart with almonds and raisons</p>")
    await crawl_archive(site.url("/"), plugins=PLUGINS, output=str(tmp_path / "one" / "kitchen"))
    await crawl_archive(other_site.url("/"), plugins=PLUGINS, output=str(tmp_path / "two" / "kitchen"))
    async with serving([tmp_path / "one" / "kitchen", tmp_path / "two" / "kitchen"]) as client:
        both = await text_of(client, "/search?q=apple")
        assert "2 results" in both and "Apple pie" in both and "Apple tart" in both
        assert '<option value="kitchen-2">' in both
        found_in_one = await text_of(client, "/search?q=raisons")
        assert "1 result" in found_in_one and "Did you mean" not in found_in_one
        misspelt = await text_of(client, "/search?q=cinammon")
        assert "Did you mean" in misspelt and ">cinnamon</a>" in misspelt
        one = await text_of(client, "/search?q=apple&archive=kitchen-2")
        assert "1 result" in one and "Apple tart" in one
        await text_of(client, "/search?q=apple&archive=nope")
        sites = await text_of(client, "/browse")
        assert site.host in sites and other_site.host in sites
        tart = await client.get(f"/replay/2/{other_site.url('/')}")
        assert tart.status == 200 and "almonds" in await tart.text()
        status = await text_of(client, "/status")
        assert status.count('class="crawl"') == 2


async def test_serve_command(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    site.page("/", "<title>Served</title><p>served by the command</p>")
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "serve",
        str(crawl.archive),
        "--port",
        "0",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        match = re.search(r"at (http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line
        async with ClientSession() as session, session.get(match.group(1) + "search?q=served") as response:
            assert response.status == 200
            assert "Served" in await response.text()
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()


async def test_serve_takes_pages_from_the_plugins_the_command_line_loads(
    site: Site, crawl_archive: CrawlFn
) -> None:
    """The QA report is the qa plugin's page (its register_routes hook): switched off, it is gone."""
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "--disable-plugin",
        "qa",
        "serve",
        str(crawl.archive),
        "--port",
        "0",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        match = re.search(r"at (http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line
        async with ClientSession() as session:
            async with session.get(match.group(1) + "qa") as response:
                assert response.status == 404
            async with session.get(match.group(1)) as response:
                assert response.status == 200  # the web plugin's search page
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()


def test_serve_command_errors(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "archiver", "serve", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    missing = run(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no archive at" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "crawl.toml").write_text("")
    bad_port = run(str(tmp_path), "--port", "70000")
    assert bad_port.returncode == 2 and "--port" in bad_port.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run(str(tmp_path), "--port", str(taken.getsockname()[1]))
    assert busy.returncode == 2 and "cannot listen on 127.0.0.1" in busy.stderr
    assert "--port 0 for any free one" in busy.stderr and len(busy.stderr.splitlines()) == 1
