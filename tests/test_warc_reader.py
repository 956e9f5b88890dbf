"""The reader API (open_archive, lookup, read) and the `warc check` / `warc ls` commands."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest
from archiver_plugins.archive_reader import open_archive
from archiver_plugins.archive_reader.capture import Capture
from archiver_plugins.archive_reader.reader import WarcArchive
from archiver_plugins.warc import WarcWriter
from archiver_plugins.warc.commands import warc_group
from archiver_plugins.warc.settings import WarcSettings
from click.testing import CliRunner

from archiver.config import Config
from archiver.errors import ArchiveError
from archiver.model import Crawl, Page

BASE = "http://127.0.0.1:8080"


def at(day: int) -> datetime:
    return datetime(2024, 1, day, 12, 0, 0, tzinfo=UTC)


async def build(tmp_path: Path, pages: list[Page], finish: bool = True) -> WarcWriter:
    crawl = Crawl(config=Config(), archive=tmp_path, roots=())
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    for page in pages:
        await writer.page_fetched(page=page, links=[], crawl=crawl)
    if finish:
        await writer.crawl_finished(crawl=crawl)
    return writer


def html(path: str, text: str, day: int, status: int = 200) -> Page:
    return Page(
        url=BASE + path,
        status=status,
        body=text.encode(),
        headers=(("Content-Type", "text/html"),),
        fetched_at=at(day),
    )


async def test_lookup_latest_and_nearest(tmp_path: Path) -> None:
    await build(tmp_path, [html("/a/", "v1", 1), html("/a/", "v2", 10), html("/a/", "v3", 20)])
    archive = open_archive(tmp_path)
    assert [c.timestamp[:8] for c in archive.captures(BASE + "/a/")] == [
        "20240101",
        "20240110",
        "20240120",
    ]
    assert archive.read(archive.lookup(BASE + "/a/")).payload == b"v3"  # type: ignore[arg-type]
    assert archive.read(archive.lookup(BASE + "/a/", "20240108")).payload == b"v2"  # type: ignore[arg-type]
    assert archive.read(archive.lookup(BASE + "/a/", "20240104000000")).payload == b"v1"  # type: ignore[arg-type]
    # SURT matching: case, www., trailing slash and default port do not matter
    assert archive.lookup("http://127.0.0.1:8080/A") is not None
    assert archive.lookup(BASE + "/b") is None


async def test_read_gives_stored_headers_and_capped_content(tmp_path: Path) -> None:
    text = b"<p>" + b"a" * 10_000 + b"</p>"
    page = Page(
        url=BASE + "/z",
        status=200,
        reason="OK",
        body=gzip.compress(text),
        headers=(("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")),
    )
    await build(tmp_path, [page])
    archive = open_archive(tmp_path / "warc")  # the warc folder itself works too
    capture = archive.lookup(BASE + "/z")
    assert capture is not None and capture.mime == "text/html" and capture.status == 200
    stored = archive.read(capture)
    assert stored.headers == list(page.headers)
    assert stored.reason == "OK" and stored.content_type == "text/html"
    assert stored.payload == page.body
    assert stored.content() == text
    with pytest.raises(ArchiveError, match="exceeds"):
        stored.content(max_size=1000)


async def test_open_file_without_cdxj_is_scanned(tmp_path: Path) -> None:
    writer = await build(tmp_path, [html("/x", "live", 1)], finish=False)
    archive = open_archive(tmp_path)
    (capture,) = list(archive.iter_captures())
    assert capture.filename.endswith(".warc.gz.open")
    crawl = Crawl(config=Config(), archive=tmp_path, roots=())
    await writer.crawl_finished(crawl=crawl)
    # the capture found while the file was open still reads after the rename
    assert archive.read(capture).payload == b"live"
    archive.refresh()
    (closed,) = list(archive.iter_captures())
    assert not closed.filename.endswith(".open")


async def test_a_file_renamed_between_the_look_and_the_open_still_reads(tmp_path: Path) -> None:
    """The crawl's WARC writer drops ``.open`` when it closes a file, at any moment of a read
    by another process (the index writer)."""
    writer = await build(tmp_path, [html("/x", "live", 1)], finish=False)
    renamed: list[Path] = []

    class RenamedAfterTheLook(WarcArchive):
        def path_of(self, capture: Capture) -> Path:
            path = super().path_of(capture)
            if not renamed:
                renamed.append(path.rename(path.with_name(path.name.removesuffix(".open"))))
            return path

    archive = RenamedAfterTheLook(tmp_path / "warc")
    (capture,) = list(archive.iter_captures())
    assert capture.filename.endswith(".warc.gz.open")
    assert archive.read(capture).payload == b"live"
    assert renamed and not list((tmp_path / "warc").glob("*.warc.gz.open"))
    renamed[0].rename(tmp_path / "warc" / capture.filename)  # the writer closes the file it opened
    await writer.crawl_finished(crawl=Crawl(config=Config(), archive=tmp_path, roots=()))


async def test_missing_cdxj_falls_back_to_scanning(tmp_path: Path) -> None:
    await build(tmp_path, [html("/1", "one", 1), html("/2", "two", 2)])
    for cdxj in (tmp_path / "warc").glob("*.cdxj"):
        cdxj.unlink()
    archive = open_archive(tmp_path)
    assert [c.url for c in archive.iter_captures()] == [BASE + "/1", BASE + "/2"]


def test_no_archive_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError):
        open_archive(tmp_path / "nothing")


async def test_check_and_ls_commands(tmp_path: Path) -> None:
    await build(tmp_path, [html("/1", "one", 1), html("/2", "two", 2, status=404)])
    runner = CliRunner()
    result = runner.invoke(warc_group, ["check", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "1 WARC file ok" in result.output
    listing = runner.invoke(warc_group, ["ls", str(tmp_path)])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert lines[0].startswith("20240101120000 200 text/html") and lines[0].endswith(BASE + "/1")
    assert " 404 " in lines[1]

    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    warc.write_bytes(warc.read_bytes()[:-10])
    result = runner.invoke(warc_group, ["check", str(warc)])
    assert isinstance(result.exception, ArchiveError)
    assert result.exception.exit_code == 1
    assert f"{warc}: offset " in result.output and "cut off" in result.output
    fixed = runner.invoke(warc_group, ["check", "--truncate", str(warc)])
    assert "cut " in fixed.output
    assert runner.invoke(warc_group, ["check", str(warc)]).exit_code == 0
