"""The serve UI's list of archived sites, over several archives holding the same site."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.index.reindex import reindex
from archiver_plugins.replay.app import make_app
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

SITE = "http://garden.test"


def archive_of(folder: Path, captures: Sequence[tuple[str, str]]) -> Path:
    """An archive of (path, WARC-Date) responses, as another tool would write them."""
    warc = folder / "warc" / "garden.warc.gz"
    warc.parent.mkdir(parents=True)
    with warc.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for path, date in captures:
            body = f"<title>{path}</title><p>{date}</p>".encode()
            record = writer.create_warc_record(
                SITE + path,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
    reindex(folder)
    return folder


def cells(page: str) -> list[str]:
    """The cells of the one site's row, as text."""
    row = re.search(r"<tbody>(.*?)</tbody>", page, re.S)
    assert row is not None, page
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)]


async def test_site_row_counts_each_url_once_and_dates_its_oldest_capture(tmp_path: Path) -> None:
    """`/` was captured first, then again; `/a` in between; the second archive holds `/` once more.
    The row says 2 URLs (not one per archive holding them), 4 captures, first the oldest capture
    (not the oldest of each URL's newest), last the newest."""
    spring = archive_of(
        tmp_path / "spring",
        [("/", "2024-01-01T10:00:00Z"), ("/a", "2024-03-01T10:00:00Z"), ("/", "2024-06-01T10:00:00Z")],
    )
    summer = archive_of(tmp_path / "summer", [("/", "2024-07-01T10:00:00Z")])
    for archives, expected in (
        ([spring], ["2", "3", "2024-01-01 10:00:00", "2024-06-01 10:00:00"]),
        ([spring, summer], ["2", "4", "2024-01-01 10:00:00", "2024-07-01 10:00:00"]),
    ):
        client = TestClient(TestServer(make_app(archives), host="127.0.0.1"))
        await client.start_server()
        try:
            response = await client.get("/browse")
            assert response.status == 200
            row = cells(await response.text())
        finally:
            await client.close()
        assert row[0] == "garden.test"
        assert row[1:5] == expected
