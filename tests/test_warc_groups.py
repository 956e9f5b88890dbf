"""Group commit in the WARC writer process: pages written together, each answered once on disk."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from archiver_plugins.archive_reader import open_archive
from archiver_plugins.archive_reader.digests import payload_digest
from archiver_plugins.warc.dedup import DigestFilter
from archiver_plugins.warc.records import RecordIds
from archiver_plugins.warc.settings import WarcSettings
from archiver_plugins.warc.verify import verify_file
from archiver_plugins.warc.worker import GROUP, Session, page_message, split_frames
from archiver_plugins.warc.writer import WarcWriter

from archiver.model import Link, Page
from archiver.testing import make_crawl

ROOT = "http://127.0.0.1:8080/"


def _page(i: int, body: bytes | None = None) -> Page:
    return Page(
        url=f"{ROOT}p{i}",
        status=200,
        reason="OK",
        headers=(("Content-Type", "text/html"),),
        request_headers=(("Host", "127.0.0.1:8080"),),
        body=body if body is not None else f"<html>page {i}</html>".encode(),
        fetched_at=datetime(2024, 1, 1, tzinfo=UTC),
    )


def _messages(pages: list[Page]) -> list[tuple[object, ...]]:
    buffer = bytearray(b"".join(page_message(i, p, [Link(ROOT)]) for i, p in enumerate(pages)))
    return split_frames(buffer)


def test_a_group_is_answered_page_by_page_in_order(tmp_path: Path) -> None:
    session = Session()
    session.start(tmp_path / "warc", WarcSettings(), [("software", "test")], os.getpid())
    pages = [_page(i) for i in range(GROUP * 2 + 3)]
    pages[5] = _page(5, body=pages[1].body)  # the same payload as an earlier page of the group
    answers = session.handle_all(_messages(pages))
    assert [(status, seq) for status, seq, _ in answers] == [("ok", i) for i in range(len(pages))]
    revisits = [seq for _, seq, (records, _size, revisit) in answers if revisit]
    assert revisits == [5]
    assert all(result[0] == 3 for _, _, result in answers)  # request, response or revisit, metadata
    session.close()
    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    report = verify_file(warc)
    assert report.ok, [str(f) for f in report.faults]
    archive = open_archive(tmp_path)
    assert sorted(c.url for c in archive.iter_captures()) == sorted(p.url for p in pages)
    for page in pages:  # each CDXJ line points at its record: the body reads back
        capture = archive.lookup(page.url)
        assert capture is not None and archive.read(capture).payload == page.body


def test_group_files_rotate_as_single_pages_do(tmp_path: Path) -> None:
    session = Session()
    settings = WarcSettings(max_size=64 * 1024, dedup=False)
    session.start(tmp_path / "warc", settings, [("software", "test")], os.getpid())
    pages = [_page(i, body=os.urandom(20_000)) for i in range(12)]
    answers = session.handle_all(_messages(pages))
    assert {status for status, _, _ in answers} == {"ok"}
    session.close()
    files = sorted((tmp_path / "warc").glob("*.warc.gz"))
    assert len(files) > 2
    for warc in files:
        report = verify_file(warc)
        assert report.ok and report.size <= 64 * 1024 + 21_000, report.faults
    urls = sorted(c.url for c in open_archive(tmp_path).iter_captures())
    assert urls == sorted(p.url for p in pages)


DISK_FULL = textwrap.dedent(
    """
    import asyncio, os, resource, sys
    from pathlib import Path
    from archiver.config import Config
    from archiver.errors import ArchiveError
    from archiver.model import Crawl, Page
    from archiver_plugins.warc import WarcWriter
    from archiver_plugins.warc.settings import WarcSettings

    async def one(writer, crawl, i):
        page = Page(url=f"http://127.0.0.1/{i}", status=200, body=os.urandom(7000),
                    headers=(("Content-Type", "image/png"),))
        try:
            await writer.page_fetched(page=page, links=[], crawl=crawl)
        except ArchiveError:
            print("failed", i, flush=True)
        else:
            print("written", i, flush=True)

    async def main():
        crawl = Crawl(config=Config(), archive=Path(sys.argv[1]), roots=())
        writer = WarcWriter(WarcSettings())
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))  # inherited by the writer
        await writer.crawl_started(crawl=crawl)
        try:
            await asyncio.gather(*(one(writer, crawl, i) for i in range(60)))
        finally:
            await writer.crawl_finished(crawl=crawl)

    asyncio.run(main())
    """
)


def test_a_failed_group_write_fails_only_pages_not_on_disk(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes a group's write fail midway, as a full disk does."""
    done = subprocess.run(
        [sys.executable, "-c", DISK_FULL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = dict(reversed(line.split(" ")) for line in done.stdout.split("\n") if line)
    written = {f"http://127.0.0.1/{i}" for i, what in outcome.items() if what == "written"}
    assert len(outcome) == 60 and 5 < len(written) < 15
    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    report = verify_file(warc)
    assert report.ok, [str(f) for f in report.faults]
    assert {c.url for c in open_archive(tmp_path).iter_captures()} == written


KILLED_MID_GROUP = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from archiver.config import Config
    from archiver.model import Crawl, Page
    from archiver_plugins.warc import WarcWriter
    from archiver_plugins.warc.settings import WarcSettings

    returned = 0

    async def one(writer, crawl, i, stop):
        global returned
        page = Page(url=f"http://127.0.0.1/{i}", status=200, body=os.urandom(30_000),
                    headers=(("Content-Type", "image/png"),))
        await writer.page_fetched(page=page, links=[], crawl=crawl)
        os.write(1, f"{i}\\n".encode())  # unbuffered: what the kill cannot take back
        returned += 1
        if returned == stop:
            os.kill(os.getpid(), signal.SIGKILL)

    async def main():
        crawl = Crawl(config=Config(), archive=Path(sys.argv[1]), roots=())
        writer = WarcWriter(WarcSettings())
        await writer.crawl_started(crawl=crawl)
        await asyncio.gather(*(one(writer, crawl, i, int(sys.argv[2])) for i in range(400)))

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("stop", [1, 37, 150])
async def test_kill_9_mid_group_loses_no_page_that_was_answered(tmp_path: Path, stop: int) -> None:
    crawl = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_MID_GROUP, str(tmp_path), str(stop), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(crawl.communicate(), 120)
    assert crawl.returncode == -9
    answered = {f"http://127.0.0.1/{n}" for n in out.decode().split()}
    assert len(answered) >= stop
    assert list((tmp_path / "warc").glob("*.open"))  # killed: the file was left open
    # the next run closes it, cut back to its last whole record
    writer = WarcWriter(WarcSettings())
    next_run = make_crawl(ROOT, archive=tmp_path)
    await writer.crawl_started(crawl=next_run)
    await writer.crawl_finished(crawl=next_run)
    assert not list((tmp_path / "warc").glob("*.open"))
    for warc in (tmp_path / "warc").glob("*.warc.gz"):
        report = verify_file(warc)
        assert report.ok, [str(f) for f in report.faults]
    stored = {c.url for c in open_archive(tmp_path).iter_captures()}
    assert answered <= stored


def test_record_ids_are_distinct_version_4_uuids() -> None:
    import uuid

    make = RecordIds()
    ids = [make() for _ in range(1000)]
    assert len(set(ids)) == 1000
    for record_id in ids[::97]:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        parsed = uuid.UUID(record_id[10:-1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == record_id[10:-1]


def test_the_digest_filter_never_forgets_a_digest() -> None:
    seen = DigestFilter(bits=1 << 12)
    digests = [payload_digest(str(i).encode()) for i in range(300)]
    for digest in digests[:150]:
        seen.add(digest)
    assert all(d in seen for d in digests[:150])
    assert sum(d in seen for d in digests[150:]) < 100  # new ones are mostly known new
    with pytest.raises(ValueError):
        DigestFilter(bits=1000)
