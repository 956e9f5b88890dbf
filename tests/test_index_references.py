"""The spool refers to the WARC records of pages the WARC files hold instead of keeping copies.

The spool thread finds a page's record in the CDXJ lines the WARC writer has just written
(`lines.py`); the index writer reads the page back from that record, and never indexes a
record that is not the page's.  Pages no record holds are spooled as copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from archiver_plugins.archive_reader.digests import payload_digest
from archiver_plugins.index.lines import RecordLines, Stored
from archiver_plugins.index.recover import bring_in_line
from archiver_plugins.index.search import search
from archiver_plugins.index.spool import PACKED, REFERENCE, Spool, pending_in
from archiver_plugins.index.store import Capture, RecordRef, spool_path
from archiver_plugins.index.writer import Control, run
from archiver_plugins.warc.records import RecordMaker
from archiver_plugins.warc.warcfile import WarcFile
from test_index_resume import forget, indexable_in_warcs, indexed, kill_group_when, start_group

from archiver.model import Page
from archiver.status import archive_status
from archiver.testing import CrawlFn, Site, make_page

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from index_pages import pages

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ("links", "warc", "index")
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "-q"]
MOMENT = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
TIME = "20240501120000"


# -- finding the record in the lines being written -------------------------------------------


def fetched(number: int, body: bytes | None = None) -> Page:
    html = body or f"<html><title>Page {number}</title><p>hello {number}</p></html>".encode()
    return make_page(f"http://h.test/{number}", html, fetched_at=MOMENT)


def stored(page: Page) -> Stored:
    return Stored(page.url, TIME, page.status, page.body)


def write(warc: WarcFile, maker: RecordMaker, *written: Page) -> None:
    for page in written:
        records = maker.page(page, [], {}, dedup=False, metadata=False)
        warc.append(records.records)


@pytest.mark.parametrize("suffix", [".warc.gz", ".warc"])
def test_a_record_is_found_once_its_line_is_written_and_after_its_file_rotated(
    tmp_path: Path, suffix: str
) -> None:
    folder = tmp_path / "warc"
    lines = RecordLines(folder)
    one, two, three, four = (fetched(n) for n in range(4))
    assert lines.locate([stored(one)]) == [None]  # no WARC folder yet: a copy
    folder.mkdir()
    maker = RecordMaker(gzip=suffix == ".warc.gz", gzip_level=6)
    first = WarcFile(folder, "a" + suffix)
    write(first, maker, one)
    [found] = lines.locate([stored(one)])
    assert found is not None and found.filename == "a" + suffix and found.target == one.url
    assert found.digest == payload_digest(one.body)
    spool = Spool(spool_path(tmp_path))  # read back from the file still being written (NAME.open)
    spool.add([Capture(one.url, TIME, 200, "text/html", "utf-8", one.content, record=found)])
    [(_, back)] = spool.read(after=0, limit=10)
    assert back is not None and back.content == one.content and back.record == found
    spool.close()

    assert lines.locate([stored(two)]) == [None]  # not written yet when the spool looks: a copy
    write(first, maker, two)
    assert lines.locate([stored(two)])[0] is not None

    write(first, maker, three)
    first.close()  # rotated: lines sorted into a.cdxj, a.cdxj.open removed
    second = WarcFile(folder, "b" + suffix)
    write(second, maker, four)
    found_three, found_four = lines.locate([stored(three), stored(four)])
    assert found_three is not None and found_three.filename == "a" + suffix
    assert found_four is not None and found_four.filename == "b" + suffix
    second.close()
    lines.close()


def test_a_line_of_another_capture_is_not_taken_for_the_page(tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    folder.mkdir()
    lines = RecordLines(folder)
    maker = RecordMaker(gzip=True, gzip_level=6)
    warc = WarcFile(folder, "a.warc.gz")
    page = fetched(1)
    write(warc, maker, page)
    changed = fetched(1, b"<html><p>another body, same URL, same second</p></html>")
    assert lines.locate([stored(changed)]) == [None]
    write(warc, maker, page)
    assert lines.locate([Stored(page.url, TIME, 404, page.body)]) == [None]
    write(warc, maker, page)
    assert lines.locate([Stored(page.url, "20240501120001", 200, page.body)]) == [None]
    warc.close()
    lines.close()


def test_the_writer_never_indexes_a_record_that_is_not_the_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "warc"
    folder.mkdir()
    maker = RecordMaker(gzip=True, gzip_level=6)
    warc = WarcFile(folder, "a.warc.gz")
    good, other = fetched(1, b"<html><p>zebra</p></html>"), fetched(2, b"<html><p>walrus</p></html>")
    write(warc, maker, good, other)
    lines = RecordLines(folder)
    where: dict[str, RecordRef] = {}
    for page in (good, other):
        record = lines.locate([stored(page)])[0]
        assert record is not None
        where[page.url] = record
    lines.close()
    warc.close()

    def capture(url: str, record: RecordRef) -> Capture:
        return Capture(url, TIME, 200, "text/html", "utf-8", b"", record=record)

    first = where[good.url]
    spool = Spool(spool_path(tmp_path))
    spool.add(
        [
            capture(good.url, first),
            # another page's record, named as this page's; the page's own record, another payload
            capture("http://h.test/elsewhere", replace(where[other.url], target="http://h.test/elsewhere")),
            capture("http://h.test/tampered", replace(first, digest=payload_digest(b"not this"))),
            capture("http://h.test/gone", replace(first, filename="gone.warc.gz")),
        ]
    )
    spool.close()
    assert rows_by_kind(tmp_path) == {REFERENCE: 4}
    with caplog.at_level(logging.WARNING, logger="archiver.index"):
        run(tmp_path, 100, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    urls, count = indexed(tmp_path)
    assert set(urls) == {good.url} and count == 1
    assert [hit.url for hit in search(tmp_path, "zebra").hits] == [good.url]
    assert not search(tmp_path, "walrus").hits
    skipped = [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert len(skipped) == 3
    assert pending_in(spool_path(tmp_path)) == 0


# -- crawls --------------------------------------------------------------------------------

PAGES = 120
SLOW_WRITER = "[plugins.index]\nwait = false\ncrawl_share = 0.01\nbatch_size = 100000\nbatch_seconds = 3600\n"
"""The writer hardly runs during the crawl and leaves what it has not indexed in the spool."""


def build(site: Site) -> list[str]:
    """PAGES documentation-like pages (~25 KB of HTML each) and a gzip-encoded one; the
    queries: the longest word of a few titles, and a few more."""
    bodies = [body for _, body in pages(PAGES, mean_words=2500)]
    site.page("/", links=[*(f"/p{i}" for i in range(PAGES)), "/gz"])
    for number, body in enumerate(bodies):
        site.page(f"/p{number}", body)
    zipped = bodies[1].replace(b"<p>", b"<p>Quokka bulletin. ", 1)
    site.page("/gz", gzip.compress(zipped), headers={"Content-Encoding": "gzip"})
    titles = [body.split(b"<title>")[1].split(b" \xe2\x80\x94")[0].decode() for body in bodies[:40:4]]
    words = [max(title.split(), key=len) for title in titles if title.isascii()]
    return [*words, "quokka", "quokka bulletin", '"example docs"']


def spool_bytes(archive: Path) -> int:
    path = spool_path(archive)
    total = 0
    for name in (path.name, path.name + "-wal"):
        with contextlib.suppress(OSError):
            total += (path.parent / name).stat().st_size
    return total


def rows_by_kind(archive: Path) -> dict[int, int]:
    db = sqlite3.connect(f"file:{spool_path(archive)}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT packed, count(*) FROM pending GROUP BY packed").fetchall())
    finally:
        db.close()


async def crawl_sampling_the_spool(args: list[str], archive: Path, env: dict[str, str] = ENV) -> int:
    """Run `archiver crawl ...`, sampling the spool's bytes every 20 ms; returns their peak."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", *args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak = 0
    while proc.returncode is None:
        peak = max(peak, spool_bytes(archive))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.02)
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return peak


def catch_up(archive: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "archiver", "reindex", "--pending", str(archive), "--processes", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def hits(archive: Path, query: str) -> list[tuple[str, str, float]]:
    """Every hit, by score (equal scores by URL: their order follows the index's layout)."""
    found = [(hit.url, hit.title, round(hit.score, 4)) for hit in search(archive, query, limit=1000).hits]
    return sorted(found, key=lambda hit: (-hit[2], hit[0]))


async def test_a_slow_writer_leaves_references_and_the_index_equals_one_made_of_copies(
    site: Site, tmp_path: Path
) -> None:
    queries = build(site)
    config = tmp_path / "slow.toml"
    config.write_text(SLOW_WRITER)
    common = ["crawl", site.url("/"), "-c", str(config), *FAST]
    referred, copied = tmp_path / "referred", tmp_path / "copied"
    with_warc = [*common, "-o", str(referred)]
    with_warc += [
        arg for name in ("links", "warc", "index") for arg in ("--plugin", f"archiver_plugins.{name}")
    ]
    referred_peak = await crawl_sampling_the_spool(with_warc, referred)
    # the fallback: no WARC written, every page spooled as a (compressed) copy
    without = [*common, "-o", str(copied), "--disable-plugin", "warc"]
    copied_peak = await crawl_sampling_the_spool(without, copied, dict(os.environ))
    assert not (copied / "warc").exists()

    waiting = rows_by_kind(referred)
    assert set(waiting) == {REFERENCE} and waiting[REFERENCE] > PAGES // 2, waiting
    assert set(rows_by_kind(copied)) == {PACKED}
    assert (spool_path(referred)).stat().st_size < 64 * 1024  # ~250 bytes a waiting page
    assert referred_peak * 2 < copied_peak, (referred_peak, copied_peak)  # ~0.3 MB against ~1.6 MB

    catch_up(referred)
    catch_up(copied)
    for archive in (referred, copied):
        urls, count = indexed(archive)
        assert len(urls) == count == PAGES + 2 and pending_in(spool_path(archive)) == 0
    for query in queries:
        found = hits(referred, query)
        assert found and found == hits(copied, query), query
    assert [url for url, _, _ in hits(referred, "quokka")] == [site.url("/gz")]


async def test_sigkill_with_references_spooled_then_resume(site: Site, tmp_path: Path) -> None:
    site.loose_web(240, delay=0.004, images=True)
    archive = tmp_path / "killed"
    config = tmp_path / "crawl.toml"
    config.write_text("[plugins.index]\ncrawl_share = 0.01\nbatch_size = 100000\nbatch_seconds = 3600\n")
    plugins = [arg for name in PLUGINS for arg in ("--plugin", f"archiver_plugins.{name}")]
    args = ["crawl", site.url("/p0"), "-o", str(archive), "-c", str(config), *FAST, *plugins]
    args += ["--frontier", "sqlite", "--max-tasks", "6", "--per-host-concurrency", "6"]
    spool = spool_path(archive)
    seen: dict[int, int] = {}

    def backlog_of_references() -> bool:
        nonlocal seen
        if not spool.exists():
            return False
        with contextlib.suppress(sqlite3.Error):
            seen = rows_by_kind(archive)
        return seen.get(REFERENCE, 0) >= 60

    proc = await start_group(args)
    assert (failed := await kill_group_when(proc, backlog_of_references, 60)) is None, failed
    assert set(seen) == {REFERENCE}, seen  # the kill left references, no copies, in the spool
    assert any(name.endswith(".warc.gz.open") for name in os.listdir(archive / "warc"))
    proc = await start_group(args)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()

    assert archive_status(archive).state == "complete"
    archived = indexable_in_warcs(archive)
    assert len(archived) == 240 and max(archived.values()) == 1
    urls, count = indexed(archive)
    assert set(urls) == set(archived) and max(urls.values()) == 1 and count == len(urls)
    assert pending_in(spool) == 0


async def test_resume_spools_the_pages_the_index_missed_as_references(
    site: Site, crawl_archive: CrawlFn
) -> None:
    site.loose_web(12, images=True)
    first = await crawl_archive(site.url("/p0"), plugins=PLUGINS, frontier="sqlite")
    archive = first.archive
    urls, _ = indexed(archive)
    lost = sorted(urls)[:3]
    forget(archive, lost)
    assert set(indexed(archive)[0]) == set(urls) - set(lost)
    assert bring_in_line(archive) == 3
    assert rows_by_kind(archive) == {REFERENCE: 3}
    run(archive, 100, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    after, count = indexed(archive)
    assert set(after) == set(urls) and count == len(urls)
