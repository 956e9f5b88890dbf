"""An archive made from another tool's WARC file (`reindex --warc FILE -o ARCHIVE`): search,
serve and export read it, and `status` says what it is."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.cli import main


def other_tools_warc(path: Path) -> Path:
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        body = b"<title>Quince</title><p>quince jelly</p>"
        record = writer.create_warc_record(
            "http://orchard.test/",
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": "2024-05-01T10:00:00Z"},
        )
        writer.write_record(record)
    return path


async def cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def test_status_of_an_archive_of_imported_warc_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "imported"
    warc = other_tools_warc(tmp_path / "other.warc.gz")
    assert await cli("reindex", "--warc", str(warc), "-o", str(archive)) == 0
    assert await cli("search", str(archive), "quince", "-q") == 0
    capsys.readouterr()

    assert await cli("status", str(archive)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{archive}: no crawl; WARC files indexed by `archiver reindex --warc`"
    assert "  pages searchable: 1" in out
    assert await cli("status", str(archive), "--json") == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["state"], found["frontier"], found["crawls"]) == ("new", "none", [])

    # a crawl into it is still refused: the folder holds no crawl to resume or extend
    assert await cli("crawl", "http://127.0.0.1:9/", "-o", str(archive), "-q") == 2
    assert "is not an archive" in capsys.readouterr().err


async def test_why_and_changes_say_what_an_archive_of_imported_warc_files_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "imported"
    warc = other_tools_warc(tmp_path / "other.warc.gz")
    assert await cli("reindex", "--warc", str(warc), "-o", str(archive), "-q") == 0
    capsys.readouterr()

    assert await cli("why", str(archive), "http://orchard.test/") == 2
    err = capsys.readouterr().err
    assert err == (
        f"archiver: error: {archive} holds WARC files imported by `archiver reindex --warc`: no crawl of"
        f" its own chose their URLs, so no rule decided them (`archiver warc ls {archive}` lists them)\n"
    )
    assert await cli("changes", str(archive)) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"{archive} holds WARC files imported by `archiver reindex --warc`, made by no crawl of its own:"
        " all its captures count as one crawl (crawl 1).\n"
    )
    assert "made before crawls were numbered" not in out
