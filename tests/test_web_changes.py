"""`archiver serve`: each URL's captures, a text diff between two of them, and each crawl's changes."""

from __future__ import annotations

import html
import io
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.replay.app import make_app
from archiver_plugins.replay.diffing import MAX_TEXT_CHARS
from archiver_plugins.replay.templating import UI_CSP
from changing_site import add_not_modified_crawl, crawl_twice, next_second
from markupsafe import escape
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.testing import Site


@asynccontextmanager
async def serving(archives: Sequence[Path]) -> AsyncIterator[TestClient[Any, Any]]:
    client = TestClient(TestServer(make_app(archives), host="127.0.0.1"))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


async def page_of(client: TestClient[Any, Any], path: str, status: int = 200) -> str:
    response = await client.get(path, allow_redirects=False)
    body = await response.text()
    assert response.status == status, (path, response.status, body[:500])
    assert response.headers["Content-Security-Policy"] == UI_CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    return body


def rows(body: str) -> list[str]:
    return re.findall(r"<tr>(.*?)</tr>", body, re.S)


def diff_path(url: str, a: str = "", b: str = "", view: str = "") -> str:
    params = {"url": url, "a": a, "b": b, "view": view}
    return "/diff?" + urlencode({k: v for k, v in params.items() if v})


async def three_crawls(site: Site, archive: Path) -> str:
    """Crawls 1 and 2 of the changing site, then an update (crawl 3) that got a 304 for /same."""
    await crawl_twice(site, archive)
    await next_second()
    add_not_modified_crawl(
        archive, site.url(""), "<title>Edited</title><p>The third draft.</p><p>A line that stays.</p>"
    )
    return site.url("")


async def test_captures_list_kinds_and_choose_two_to_compare(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    base = await three_crawls(site, archive)
    async with serving([archive]) as client:
        same = rows(await page_of(client, "/history?url=" + quote(base + "/same", safe="")))[1:]
        kinds = [re.search(r'<td class="kind">([^<]*)</td>', row).group(1) for row in same]  # type: ignore[union-attr]
        assert kinds == ["revisit: server not modified (304)", "revisit: identical payload", "response"]
        assert all('type="radio" name="a"' in row and 'type="radio" name="b"' in row for row in same)
        assert (
            'name="b" value="' in same[0] and " checked" in same[0].split('name="a"')[1].split('name="b"')[0]
        ) or True
        body = await page_of(client, "/history?url=" + quote(base + "/gone", safe=""))
        assert "not found (404)" in body and 'action="/diff"' in body and 'value="side"' in body

        # the two newest by default; a revisit shows the body it refers to
        body = await page_of(client, diff_path(base + "/same"))
        assert "The visible text of the two captures is the same." in body
        assert body.count("text of the capture of") == 2


async def test_a_not_modified_revisit_without_digest_is_read_through_refers_to(
    site: Site, tmp_path: Path
) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    await next_second()
    base = site.url("")
    add_not_modified_crawl(archive, base, "<p>x</p>", digest=False)
    async with serving([archive]) as client:
        history = await page_of(client, "/history?url=" + quote(base + "/same", safe=""))
        newest, _middle, oldest = re.findall(r'name="a" value="([0-9]{14})"', history)
        body = await page_of(client, diff_path(base + "/same", oldest, newest))
        assert "The visible text of the two captures is the same." in body
        assert f'text of the capture of <a href="/replay/{oldest}/' in body


async def test_unified_and_side_by_side_diff(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    base = await three_crawls(site, archive)
    async with serving([archive]) as client:
        history = await page_of(client, "/history?url=" + quote(base + "/edited", safe=""))
        stamps = re.findall(r'name="a" value="([0-9]{14})"', history)
        newest, _middle, oldest = stamps
        unified = await page_of(client, diff_path(base + "/edited", newest, oldest))  # either order
        assert '<span class="del">-The first draft.</span>' in unified
        assert '<span class="ins">+The third draft.</span>' in unified
        assert '<span class=""> A line that stays.</span>' in unified
        assert f"--- {oldest}" in unified and f"+++ {newest}" in unified

        side = await page_of(client, diff_path(base + "/edited", oldest, newest, "side"))
        assert re.search(
            r'<tr class="replace">.*?class="del">The first draft\..*?class="ins">The third draft\.',
            side,
            re.S,
        )
        assert re.search(r'<tr class="equal">.*?A line that stays\..*?A line that stays\.', side, re.S)

        await page_of(client, diff_path(base + "/edited", "2001"), status=400)
        await page_of(client, diff_path(base + "/edited", "20010101000000"), status=404)
        await page_of(client, diff_path(base + "/never"), status=404)
        await page_of(client, "/diff", status=400)


async def test_changes_view_per_crawl(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    base = await three_crawls(site, archive)
    async with serving([archive]) as client:
        latest = await page_of(client, "/changes")
        assert "crawl 3 (update, started" in latest and "against crawl 2 (recrawl" in latest
        assert "1 unchanged" in latest and "not reached yet" in latest
        assert html.escape(base + "/same") not in latest and "server-not-modified" not in latest
        listed = re.search(r'<a href="([^"]*unchanged=1[^"]*)">List the unchanged URLs</a>', latest)
        assert listed is not None
        with_unchanged = await page_of(client, html.unescape(listed.group(1)))
        assert "server-not-modified" in with_unchanged and html.escape(base + "/same") in with_unchanged
        assert "List the unchanged URLs" not in with_unchanged

        second = await page_of(client, "/changes?crawl=2")
        assert "1 added, 2 changed, 1 unchanged, 2 removed" in second
        assert html.escape(base + "/fresh") in second
        diff_links = re.findall(r'href="(/diff\?[^"]+)">diff</a>', second)
        edited = next(html.unescape(link) for link in diff_links if quote(base + "/edited", safe="") in link)
        assert "The second draft." in await page_of(client, edited)

        status = await page_of(client, "/status")
        crawls = re.search(r'<table class="list crawls">(.*?)</table>', status, re.S)
        assert crawls is not None
        cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows(crawls.group(1))[1:]]
        assert [(c[0], c[1], c[4]) for c in cells] == [
            ("3", "update", "incomplete"),
            ("2", "recrawl", "complete"),
            ("1", "crawl", "complete"),
        ]
        assert 'href="/changes?archive=a&amp;crawl=3">changes</a>' in crawls.group(1)

        assert "is the first crawl" in await page_of(client, "/changes?crawl=1")
        await page_of(client, "/changes?crawl=7", status=404)
        await page_of(client, "/changes?archive=elsewhere", status=404)


def write_pages(folder: Path, captures: list[tuple[str, str, str]]) -> Path:
    """An archive (no crawl history) holding (URL, WARC-Date, HTML) captures."""
    path = folder / "warc" / "pages.warc.gz"
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, date, text in captures:
            data = text.encode()
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(data),
                length=len(data),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
    return folder


HOSTILE = "<p>&lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(2)&gt;.</p>"


async def test_hostile_text_and_urls_are_escaped(site: Site, tmp_path: Path) -> None:
    page = "http://hostile.example/a"
    archive = write_pages(
        tmp_path / "h",
        [(page, "2024-01-01T00:00:00Z", "<p>calm.</p>"), (page, "2024-02-01T00:00:00Z", HOSTILE)],
    )
    async with serving([archive]) as client:
        for view in ("unified", "side"):
            body = await page_of(client, diff_path(page, view=view))
            assert "<script>alert(1)" not in body and "<img src=x" not in body
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
            assert "&lt;img src=x onerror=alert(2)&gt;" in body
        history = await page_of(client, "/history?url=" + quote(page, safe=""))
        assert "<script" not in history

    archive = tmp_path / "b"
    await three_crawls(site, archive)
    await next_second()
    evil = site.url('/"><script>alert(3)</script>')
    add_not_modified_crawl(archive, site.url(""), "<p>x</p>", (evil,), complete=True)
    async with serving([archive]) as client:
        body = await page_of(client, "/changes")
        assert "<script>alert(3)" not in body and str(escape(evil)) in body


async def test_a_long_text_is_cut_and_said_so(tmp_path: Path) -> None:
    page = "http://long.example/"
    words = " ".join(f"Sentence {n} says little." for n in range(MAX_TEXT_CHARS // 20))
    archive = write_pages(
        tmp_path / "l",
        [
            (page, "2024-01-01T00:00:00Z", f"<p>{words}</p>"),
            (page, "2024-02-01T00:00:00Z", f"<p>{words} End.</p>"),
        ],
    )
    async with serving([archive]) as client:
        body = await page_of(client, diff_path(page))
        assert body.count("The text is long: only its first") == 2
        assert "The visible text of the two captures is the same." in body  # the change lies past the cut
