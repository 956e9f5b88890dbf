"""`/history` of a URL with thousands of captures is paged: 100 captures a page, newest first."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from urllib.parse import quote

from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.replay.app import make_app
from archiver_plugins.replay.views import CAPTURES_PER_PAGE
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

PAGE = "http://often.example/"
CAPTURES = 2_050


def stamp(n: int) -> str:
    """The n-th capture's WARC-Date: one a minute from 2024-01-01."""
    return f"2024-01-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"


def digits(n: int) -> str:
    return re.sub(r"[^0-9]", "", stamp(n))


def write_captures(folder: Path) -> Path:
    path = folder / "warc" / "often.warc"
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=False)
        for n in range(CAPTURES):
            body = b"capture %d" % n
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                PAGE,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": stamp(n)},
            )
            writer.write_record(record)
    return folder


def rows(body: str) -> list[str]:
    return re.findall(r"<tr>(.*?)</tr>", body, re.S)[1:]


async def test_history_is_paged_newest_first_with_links(tmp_path: Path) -> None:
    archive = write_captures(tmp_path / "a")
    pages = -(-CAPTURES // CAPTURES_PER_PAGE)
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        base = "/history?url=" + quote(PAGE, safe="")
        first = await (await client.get(base)).text()
        assert len(first) < 200_000, "one page of the history is small"
        shown = rows(first)
        assert len(shown) == CAPTURES_PER_PAGE
        assert digits(CAPTURES - 1) in shown[0] and digits(CAPTURES - CAPTURES_PER_PAGE) in shown[-1]
        assert f"{CAPTURES:,} captures · page 1 of {pages}" in first
        assert " checked" in shown[0] and " checked" in shown[1]  # B and A: the two newest
        links = {int(n) for n in re.findall(r'href="/history\?url=[^"]*?page=(\d+)"', html.unescape(first))}
        assert 2 in links and pages not in links  # the next page and its neighbours
        assert 'rel="next"' in first and 'rel="prev"' not in first

        last = await (await client.get(f"{base}&page={pages}")).text()
        shown = rows(last)
        assert len(shown) == CAPTURES - (pages - 1) * CAPTURES_PER_PAGE
        assert digits(0) in shown[-1]
        assert 'rel="prev"' in last and 'rel="next"' not in last
        assert " checked" not in last

        beyond = await (await client.get(f"{base}&page=99999")).text()
        assert rows(beyond) == rows(last)  # past the end: the last page
        seen: set[str] = set()
        for page in range(1, pages + 1):
            body = await (await client.get(f"{base}&page={page}")).text()
            seen.update(re.findall(r"/replay/(\d{14})/", body))
        assert seen == {digits(n) for n in range(CAPTURES)}
    finally:
        await client.close()
