"""Index plugin end to end: crawl a local site, search it, rebuild from WARCs, survive kills."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import signal
from datetime import UTC, datetime
from pathlib import Path

import archiver_plugins.index as index_plugin
import pytest
from archiver_plugins.index.search import search
from archiver_plugins.index.spool import pending_in
from archiver_plugins.index.store import (
    Capture,
    WriterLock,
    engine_dir,
    make_document,
    open_engine,
    open_or_create,
    spool_path,
)
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.cli import main
from archiver.config import load_config
from archiver.errors import ConfigError
from archiver.model import Crawl, Page
from archiver.testing import make_page

PLUGINS = ("links", "warc", "index")
QUERIES = ("asyncio queue", '"event loop"', "title:queue", "搜索", "asyn*", "gardening OR loop")


def html(title: str, body: str) -> str:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"


def build_site(site) -> None:  # type: ignore[no-untyped-def]
    site.page(
        "/",
        html(
            "Home",
            '<a href="/queue">q</a> <a href="/tutorial">t</a> <a href="/loop">l</a>'
            ' <a href="/zh">z</a> <a href="/missing">m</a> <a href="/logo.png">i</a>'
            ' <a href="/old">o</a> <a href="/notes.txt">n</a>',
        ),
    )
    site.page("/queue", html("Asyncio Queue", "<h1>Asyncio queue</h1><p>Queues hand work to tasks.</p>"))
    site.page(
        "/tutorial",
        html("Tutorial", "<p>It mentions an asyncio queue once. " + "Gardening tips. " * 50 + "</p>"),
    )
    site.page("/loop", html("Event loop", "<p>The event loop runs every task.</p>"))
    site.page("/zh", html("中文", "<p>这是一个关于全文搜索的页面。</p>"))
    site.page("/missing", html("Gone queue", "<p>queue</p>"), status=404)
    site.page("/logo.png", b"\x89PNG queue", content_type="image/png")
    site.page("/notes.txt", "plain text notes about a queue", content_type="text/plain")
    site.redirect("/old", "/queue")


def snapshot(archive: Path) -> dict[str, list[tuple[str, str, str]]]:
    return {q: [(h.url, h.time, h.title) for h in search(archive, q, limit=50).hits] for q in QUERIES}


def warc_dates(archive: Path) -> dict[str, str]:
    dates: dict[str, str] = {}
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    date = record.rec_headers.get_header("WARC-Date")
                    dates[record.rec_headers.get_header("WARC-Target-URI")] = date
    return dates


async def test_crawl_indexes_successful_pages_and_search_finds_them(site, crawl_archive) -> None:  # type: ignore[no-untyped-def]
    build_site(site)
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    archive = Path(crawl.archive)
    assert crawl.stats["index.pending"] == 0
    found = {h.url for h in search(archive, "queue", limit=50).hits}
    assert site.url("/queue") in found and site.url("/tutorial") in found
    assert site.url("/notes.txt") in found
    assert site.url("/missing") not in found and site.url("/logo.png") not in found
    assert site.url("/old") not in found
    ranked = search(archive, "asyncio queue").hits
    assert ranked[0].url == site.url("/queue")
    assert [h.url for h in search(archive, "搜索").hits] == [site.url("/zh")]
    assert [h.url for h in search(archive, f"queue site:{site.url('/').split('/')[2].split(':')[0]}").hits]
    # (url, capture time) finds the WARC record: same second as its WARC-Date
    dates = warc_dates(archive)
    for hit in ranked:
        date = dates[hit.url]
        assert hit.time == date[:19].replace("-", "").replace(":", "").replace("T", "")
    assert ("pages searchable", len({*found, site.url("/"), site.url("/loop"), site.url("/zh")})) in (
        index_plugin.archive_status(archive=archive) or []
    )


async def test_reindex_gives_the_same_hits_as_the_crawl(site, crawl_archive, capsys) -> None:  # type: ignore[no-untyped-def]
    build_site(site)
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    archive = Path(crawl.archive)
    before = snapshot(archive)
    assert all(before.values())
    status = index_plugin.archive_status(archive=archive)
    assert status == [("pages searchable", 6)]
    assert await asyncio.to_thread(main, ["reindex", str(archive)]) == 0
    assert "indexed 6 pages from 1 WARC file" in capsys.readouterr().out
    assert snapshot(archive) == before
    assert index_plugin.archive_status(archive=archive) == status


def write_foreign_warc(path: Path) -> None:
    """A WARC as another tool writes it: chunked and gzipped bodies, revisits, a 404."""
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)

        def response(
            url: str, date: str, body: bytes, headers: list[tuple[str, str]], status: str = "200 OK"
        ) -> None:
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)

        plain = html("Foreign page", "<p>Archived by another crawler, mentions zebras.</p>").encode()
        response(
            "http://foreign.test/a",
            "2023-01-02T03:04:05Z",
            plain,
            [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(plain)))],
        )
        zipped = gzip.compress(html("Zipped", "<p>compressed giraffes</p>").encode())
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(zipped), zipped)
        response(
            "http://foreign.test/z",
            "2023-01-02T03:04:06.123456Z",
            chunked,
            [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
        )
        cyrillic = html("Привет", "<p>Съешь же ещё этих мягких французских булок</p>").encode("cp1251")
        response(
            "http://foreign.test/ru",
            "2023-01-02T03:04:07Z",
            cyrillic,
            [("Content-Type", "text/html; charset=windows-1251")],
        )
        missing = html("Gone", "<p>zebras</p>").encode()
        response(
            "http://foreign.test/gone",
            "2023-01-02T03:04:08Z",
            missing,
            [("Content-Type", "text/html")],
            status="404 Not Found",
        )
        newer = html("Newer", "<p>the newer capture has okapis</p>").encode()
        response("http://foreign.test/dup", "2023-06-01T00:00:00Z", newer, [("Content-Type", "text/html")])
        older = html("Older", "<p>the older capture has lemurs</p>").encode()
        response("http://foreign.test/dup", "2022-06-01T00:00:00Z", older, [("Content-Type", "text/html")])
        # a revisit: same payload as /a, fetched again under another URL
        record = writer.create_revisit_record(
            "http://foreign.test/a-copy",
            digest=_payload_digest(path, handle, "http://foreign.test/a"),
            refers_to_uri="http://foreign.test/a",
            refers_to_date="2023-01-02T03:04:05Z",
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
        )
        record.rec_headers.replace_header("WARC-Date", "2023-01-03T00:00:00Z")
        writer.write_record(record)


def _payload_digest(path: Path, handle: io.BufferedWriter, url: str) -> str:
    handle.flush()
    with path.open("rb") as reader:
        for record in ArchiveIterator(reader):
            if record.rec_headers.get_header("WARC-Target-URI") == url:
                return str(record.rec_headers.get_header("WARC-Payload-Digest"))
    raise AssertionError(url)


def test_reindex_foreign_warc_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warc = tmp_path / "other-tool.warc.gz"
    write_foreign_warc(warc)
    out = tmp_path / "imported"
    assert main(["reindex", "--warc", str(warc), "-o", str(out)]) == 0
    capsys.readouterr()

    def hits(query: str) -> list[tuple[str, str]]:
        return [(h.url, h.time) for h in search(out, query).hits]

    assert set(hits("zebras")) == {
        ("http://foreign.test/a", "20230102030405"),
        ("http://foreign.test/a-copy", "20230103000000"),
    }
    assert hits("giraffes") == [("http://foreign.test/z", "20230102030406")]
    assert hits("французских") == [("http://foreign.test/ru", "20230102030407")]
    assert hits("okapis") == [("http://foreign.test/dup", "20230601000000")]
    assert hits("lemurs") == []


def test_reindex_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reindex", "--warc", str(tmp_path / "x.warc.gz")]) == 2
    assert main(["reindex", str(tmp_path / "missing")]) == 2
    assert main(["reindex", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs -o" in err and "no archive at" in err and "is not an archive" in err
    assert "Traceback" not in err


def make_crawl(archive: Path, **index_options: object) -> Crawl:
    config = load_config(None, {"plugins": {"index": index_options}})
    index_plugin.configure(config=config, pm=None)  # type: ignore[arg-type]
    return Crawl(config=config, archive=archive, roots=())


def page(number: int, word: str = "hello") -> Page:
    body = html(f"Page {number}", f"<p>{word} world number{number}</p>")
    fetched_at = datetime(2024, 5, 1, 12, 0, number % 60, 999_999, tzinfo=UTC)
    return make_page(f"http://h.test/{number}", body, fetched_at=fetched_at)


async def test_a_killed_writer_is_restarted_and_loses_nothing(tmp_path: Path) -> None:
    crawl = make_crawl(tmp_path, batch_size=5, batch_seconds=0.2)
    await index_plugin.crawl_started(crawl=crawl)
    feeder = crawl.stash[index_plugin.FEEDER_KEY]
    assert feeder.writer_pid is None  # started with the first page, not before
    first = None
    for number in range(30):
        await index_plugin.page_fetched(page=page(number), links=(), crawl=crawl)
        if number == 15:
            await asyncio.sleep(1.0)
            first = feeder.writer_pid
            assert first is not None
            os.kill(first, signal.SIGKILL)
    for _ in range(100):
        if feeder.writer_pid != first:
            break
        await asyncio.sleep(0.1)
    assert feeder.writer_pid != first
    await index_plugin.crawl_finished(crawl=crawl)
    assert crawl.stats["index.pending"] == 0
    results = search(tmp_path, "hello", limit=100)
    assert results.total == 30
    assert {h.url for h in results.hits} == {f"http://h.test/{n}" for n in range(30)}
    assert results.hits[0].time.startswith("202405011200")
    with WriterLock(tmp_path):  # no stale lock
        pass


async def test_interrupted_crawl_commits_and_catches_up_later(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    crawl = make_crawl(tmp_path, batch_size=10_000, batch_seconds=600)
    await index_plugin.crawl_started(crawl=crawl)
    for number in range(200):
        await index_plugin.page_fetched(page=page(number), links=(), crawl=crawl)
    crawl.interrupted = True
    await index_plugin.crawl_finished(crawl=crawl)
    indexed = 0
    if engine_dir(tmp_path).exists():
        index = open_engine(tmp_path)
        indexed = index.pages()
        index.close()
    waiting = pending_in(spool_path(tmp_path))
    assert indexed + waiting == 200
    assert crawl.stats["index.pending"] == waiting
    if waiting:
        assert ("pages waiting for the index", waiting) in (
            index_plugin.archive_status(archive=tmp_path) or []
        )
    assert await asyncio.to_thread(main, ["reindex", "--pending", str(tmp_path)]) == 0
    assert search(tmp_path, "hello").total == 200
    assert pending_in(spool_path(tmp_path)) == 0


async def test_damaged_index_is_set_aside_and_reported(tmp_path: Path) -> None:
    index, _ = open_or_create(engine_dir(tmp_path))
    html = b"<title>old</title>"
    index.add(make_document(Capture("http://old.test/", "20240501120000", 200, "text/html", "utf-8", html)))
    index.commit()
    index.close()
    (engine_dir(tmp_path) / "meta.json").write_bytes(b"")  # what a power loss can leave
    crawl = make_crawl(tmp_path, batch_seconds=0.2)
    await index_plugin.crawl_started(crawl=crawl)
    await index_plugin.page_fetched(page=page(1, "fresh"), links=(), crawl=crawl)
    await index_plugin.crawl_finished(crawl=crawl)
    results = search(tmp_path, "fresh")
    assert results.total == 1
    assert any("archiver reindex" in note for note in results.notes)


def test_bad_plugin_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match="batch_sise"):
        make_crawl(Path("."), batch_sise=3)
    with pytest.raises(ConfigError, match="batch_size"):
        make_crawl(Path("."), batch_size=0)
    with pytest.raises(ConfigError, match="crawl_share"):
        make_crawl(Path("."), crawl_share=1.5)
    for wrong in (0, 257, 1.5, "2", True):
        with pytest.raises(ConfigError, match=r"\[plugins\.index\] processes: "):
            make_crawl(Path("."), processes=wrong)


@pytest.mark.parametrize("processes", [1, 2])
async def test_catch_up_after_the_crawl_shows_progress_and_ctrl_c_leaves_the_rest(
    tmp_path: Path, processes: int
) -> None:
    crawl = make_crawl(tmp_path, batch_size=50, batch_seconds=600, processes=processes)
    await index_plugin.crawl_started(crawl=crawl)
    words = " ".join(f"filler{n % 700}" for n in range(3000))  # ~10 ms of indexing a page
    pages = [page(n, words) for n in range(400)]
    await asyncio.gather(*(index_plugin.page_fetched(page=p, links=(), crawl=crawl) for p in pages))
    finishing = asyncio.ensure_future(index_plugin.crawl_finished(crawl=crawl))
    shown = ""
    for _ in range(400):
        shown = crawl.finishing
        if shown.startswith("indexing"):
            break
        await asyncio.sleep(0.01)
    assert shown.startswith("indexing ") and "pages..." in shown
    for _ in range(3000):  # until a first commit (the workers take a moment to start)
        if pending_in(spool_path(tmp_path)) < 400:
            break
        await asyncio.sleep(0.01)
    crawl.interrupted = True  # Ctrl-C: the writer commits what it has and stops
    await asyncio.wait_for(finishing, 60)
    assert not crawl.finishing
    waiting = pending_in(spool_path(tmp_path))
    assert 0 < waiting < 400 and crawl.stats["index.pending"] == waiting
    assert crawl.left_to_do == [
        f"{waiting:,} pages wait for the search index; `archiver reindex --pending {tmp_path}` indexes them"
    ]
    status = dict(index_plugin.archive_status(archive=tmp_path) or [])
    assert status["index catch-up"] == f"run `archiver reindex --pending {tmp_path}`"
    indexed = open_engine(tmp_path)
    assert indexed.pages() + waiting == 400
    indexed.close()
