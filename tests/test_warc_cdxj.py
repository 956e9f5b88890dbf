"""CDXJ files and SURT keys agree with the reference tools (cdxj-indexer, surt; tests only)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import surt as reference_surt
from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc, sort_lines
from archiver_plugins.archive_reader.surt import surt
from archiver_plugins.warc import WarcWriter
from archiver_plugins.warc.settings import WarcSettings
from cdxj_indexer.main import CDXJIndexer

from archiver.config import Config
from archiver.model import Crawl, Page

URLS = [
    "http://www.Example.com/A/b?z=1&a=2#frag",
    "https://example.com",
    "http://127.0.0.1:8080/x?b=&a",
    "http://example.com:80/",
    "https://www2.example.com:443/p/",
    "http://example.com/a/../b/./c",
    "http://example.com/%7Euser/a%20b",
    "http://Bücher.example/ü?q=ü",
    "http://example.com/a;jsessionid=ABCDEF0123456789ABCDEF0123456789?x",
    "http://user:pw@example.com/",
    "http://example.com/index.html?",
    "http://example.com//a//b",
    "http://[::1]:8080/x",
    "http://example.com/path%2fx?q=a+b%20c",
    "http://example.com/?a=1&a=0&A=2",
    "http://www.example.com./x",
    "http://example.com/x?PHPSESSID=0123456789abcdef0123456789abcdef&y=2",
    "http://example.com/a b/<x>?x=<1>",
    "http://example.com/%25252F",
    "http://example.com/%E2%82%AC",
    "http://example.com/a?&&b=1&",
    "http://2130706433/",
    "http://example.com/x?cfid=1&cftoken=2&z=3",
    "http://localhost:1234/",
    "dns:example.com",
]


@pytest.mark.parametrize("url", URLS)
def test_surt_matches_reference(url: str) -> None:
    assert surt(url) == reference_surt.surt(url)


def reference_lines(warc: Path, tmp_path: Path) -> list[str]:
    output = tmp_path / "reference.cdxj"
    CDXJIndexer(output=str(output), inputs=[str(warc)], sort=True).process_all()
    return sorted(output.read_text().splitlines(keepends=True))


async def test_cdxj_matches_cdxj_indexer(tmp_path: Path) -> None:
    crawl = Crawl(config=Config(), archive=tmp_path, roots=())
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    base = "http://127.0.0.1:8080"
    pages = [
        Page(url=base + "/", status=200, reason="OK", body=b"<html>home</html>",
             headers=(("Content-Type", "text/html; charset=UTF-8"),)),
        Page(url=base + "/Upper/Case/?b=2&a=1", status=200, body=b"x",
             headers=(("content-type", " text/plain ;charset=x"),)),
        Page(url=base + "/gz", status=200, body=gzip.compress(b"zipped"),
             headers=(("Content-Type", "text/css"), ("Content-Encoding", "gzip"))),
        Page(url=base + "/dup", status=200, body=b"<html>home</html>",
             headers=(("Content-Type", "text/html"),)),
        Page(url=base + "/old", status=301, reason="Moved", body=b"",
             headers=(("Location", "/"),)),
        Page(url=base + "/none", status=404, body=b"no type"),
        Page(url="http://www.example.com/caf%C3%A9", status=200, body=b"cafe",
             headers=(("Content-Type", "text/html"),)),
    ]  # fmt: skip
    for page in pages:
        await writer.page_fetched(page=page, links=[], crawl=crawl)
    await writer.crawl_finished(crawl=crawl)
    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    ours = cdxj_path_for(warc).read_text().splitlines(keepends=True)
    assert ours == sorted(ours)
    assert ours == reference_lines(warc, tmp_path)
    assert sort_lines(index_warc(warc)) == ours  # the rebuild path agrees too
    assert len(ours) == len(pages)


def test_sort_in_runs_matches_sorting_in_memory(tmp_path: Path) -> None:
    from archiver_plugins.archive_reader.capture import Capture
    from archiver_plugins.archive_reader.cdxj import sort_cdxj_file

    captures = [
        Capture(f"http://h{i % 7}.example/{u}/{i}", f"2024010112{i % 60:02d}00", 200, "text/html",
                "sha1:X", 100 + i, 1000 * i, "f.warc.gz")
        for i in range(500) for u in ("a", "é", "z~", "A")
    ]  # fmt: skip
    source = tmp_path / "f.cdxj.open"
    source.write_text("".join(c.to_cdxj() + "\n" for c in captures), encoding="utf-8")
    for chunk in (1, 4096, 10**9):  # a run per line, several runs, one run
        target = tmp_path / f"sorted-{chunk}.cdxj"
        sort_cdxj_file(source, target, chunk_bytes=chunk)
        assert target.read_text(encoding="utf-8").splitlines(keepends=True) == sort_lines(captures)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "f.cdxj.open", "sorted-1.cdxj", "sorted-1000000000.cdxj", "sorted-4096.cdxj"
    ]  # fmt: skip


async def test_crashed_runs_line_files_are_dropped(tmp_path: Path) -> None:
    crawl = Crawl(config=Config(), archive=tmp_path, roots=())
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    await writer.page_fetched(
        page=Page(url="http://127.0.0.1:8080/", status=200, body=b"a"), links=[], crawl=crawl
    )
    await writer.crawl_finished(crawl=crawl)
    folder = tmp_path / "warc"
    (warc,) = folder.glob("*.warc.gz")
    # killed while closing: the WARC file renamed, its CDXJ not yet sorted
    cdxj_path_for(warc).rename(folder / (cdxj_path_for(warc).name + ".open"))
    # killed while writing: a WARC file and its line file both still open, lines behind
    crashed = folder / "x-20200101000000000-00000-h-1.warc.gz.open"
    crashed.write_bytes(warc.read_bytes())
    (folder / "x-20200101000000000-00000-h-1.cdxj.open").write_text("")
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    await writer.crawl_finished(crawl=crawl)
    assert not list(folder.glob("*.open"))
    for path in folder.glob("*.warc.gz"):
        assert cdxj_path_for(path).read_text() == "".join(sort_lines(index_warc(path)))
