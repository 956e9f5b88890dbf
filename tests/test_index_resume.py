"""The index after kills: pages are on disk before their URL is done, and resume fills the gaps."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import archiver_plugins.index as index_plugin
from archiver_plugins.index.recover import bring_in_line
from archiver_plugins.index.spool import Spool, pending_in
from archiver_plugins.index.store import Capture, open_engine, spool_path
from warcio.archiveiterator import ArchiveIterator

from archiver.config import load_config
from archiver.layout import STATE_NAME
from archiver.model import Crawl, Page
from archiver.status import archive_status
from archiver.testing import CrawlFn, Site, make_page

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ("links", "warc", "index")
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "--frontier", "sqlite", "-q"]


def indexable_in_warcs(archive: Path) -> collections.Counter[str]:
    """URLs of the 2xx HTML and text responses in the WARC files, with their record counts."""
    found: collections.Counter[str] = collections.Counter()
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                status = int(record.http_headers.get_statuscode())
                kind = record.http_headers.get_header("Content-Type") or ""
                if 200 <= status < 300 and kind.startswith(("text/html", "text/plain")):
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


def indexed(archive: Path) -> tuple[collections.Counter[str], int]:
    """URLs of the index's documents (a URL indexed twice makes the count exceed them), and
    the engine's document count."""
    index = open_engine(archive)
    try:
        return collections.Counter(list(index.indexed_times())), index.pages()
    finally:
        index.close()


async def start_crawl(args: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", *args, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


async def test_sigkill_then_resume_leaves_exactly_the_archived_pages_indexed(
    site: Site, tmp_path: Path
) -> None:
    site.loose_web(300, delay=0.004, images=True)
    archive = tmp_path / "killed"
    plugins = [arg for name in PLUGINS for arg in ("--plugin", f"archiver_plugins.{name}")]
    config = tmp_path / "crawl.toml"
    config.write_text("[plugins.index]\nbatch_size = 40\nbatch_seconds = 0.3\n")
    args = ["crawl", site.url("/p0"), "-o", str(archive), "-c", str(config), *FAST, *plugins]
    args += ["--max-tasks", "6", "--per-host-concurrency", "6"]
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    kills = 0
    for _ in range(5):
        wanted = site.hits.total() + rng.randint(20, 70)
        proc = await start_crawl(args)
        while proc.returncode is None and site.hits.total() < wanted:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 0.005)
        await asyncio.sleep(rng.uniform(0, 0.03))
        if proc.returncode is None:
            proc.kill()
            kills += 1
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode in (0, -9), err.decode()
    proc = await start_crawl(args)
    _, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()

    assert kills >= 3, f"seed {seed}"
    assert archive_status(archive).state == "complete"
    pages = indexable_in_warcs(archive)
    assert len(pages) > 250 and max(pages.values()) == 1, f"seed {seed}"
    urls, count = indexed(archive)
    assert set(urls) == set(pages), f"seed {seed}: missing {sorted(set(pages) - set(urls))[:5]}"
    assert max(urls.values()) == 1 and count == len(urls), f"seed {seed}"
    assert pending_in(spool_path(archive)) == 0


def rewind(state: Path, in_flight: list[str]) -> None:
    """Leave `state` as a kill between the WARC write and `done` would: `in_flight` taken."""
    db = sqlite3.connect(state)
    with db:
        db.executemany("UPDATE urls SET state = 1, taken_at = 0 WHERE key = ?", [(k,) for k in in_flight])
        for number, name in enumerate(("queued", "in_flight", "done", "failed")):
            db.execute(
                "UPDATE meta SET value = (SELECT count(*) FROM urls WHERE state = ?) WHERE name = ?",
                (number, f"count_{name}"),
            )
    db.close()


def forget(archive: Path, urls: list[str]) -> None:
    """Take `urls` out of the index, as if the run that fetched them died before spooling them."""
    index = open_engine(archive)
    for url in urls:
        index.delete(url)
    index.commit()
    index.close()


async def test_resume_indexes_archived_pages_the_index_missed(site: Site, crawl_archive: CrawlFn) -> None:
    site.loose_web(30, images=True)
    site.page("/notes.txt", "plain notes", content_type="text/plain")
    site.page("/p0", '<title>home</title><a href="/p1">1</a> <a href="/notes.txt">n</a>')
    first = await crawl_archive(site.url("/p0"), plugins=PLUGINS, frontier="sqlite")
    archive = first.archive
    lost = [site.url("/p3"), site.url("/p4")]
    forget(archive, [*lost, site.url("/p5")])
    rewind(archive / STATE_NAME, lost)
    before = site.hits.copy()

    again = await crawl_archive(site.url("/p0"), plugins=PLUGINS, frontier="sqlite")
    assert again.resumed and again.stats["resume_from_warc"] == 2
    assert site.hits == before  # nothing fetched again
    assert again.stats["index.recovered"] == 3  # /p5 was neither done nor in flight: also found
    urls, count = indexed(archive)
    assert set(urls) == set(indexable_in_warcs(archive)) and count == len(urls)

    # in line already: a second check spools nothing
    assert bring_in_line(archive) == 0


async def test_resume_does_not_spool_what_the_spool_or_the_index_holds(
    site: Site, crawl_archive: CrawlFn
) -> None:
    site.loose_web(12, images=True)
    first = await crawl_archive(site.url("/p0"), plugins=PLUGINS, frontier="sqlite")
    archive = first.archive
    urls, _ = indexed(archive)
    lost = sorted(urls)[:3]
    forget(archive, lost)
    spool = Spool(spool_path(archive))
    spool.add([Capture(lost[0], "29990101000000", 200, "text/html", "utf-8", b"<p>newer</p>")])
    spool.close()
    assert bring_in_line(archive) == 2  # lost[0] waits in the spool already
    assert sorted(u for u, _ in Spool(spool_path(archive)).captured()) == sorted(lost)


async def test_page_fetched_returns_once_the_page_is_on_disk(tmp_path: Path) -> None:
    """A kill right after `page_fetched` returned (the URL is then marked done) loses nothing."""
    config = load_config(None, {"plugins": {"index": {"batch_size": 10_000, "batch_seconds": 600}}})
    crawl = Crawl(config=config, archive=tmp_path, roots=())
    await index_plugin.crawl_started(crawl=crawl)
    try:
        pages = [page(n) for n in range(40)]
        await asyncio.gather(*(index_plugin.page_fetched(page=p, links=(), crawl=crawl) for p in pages))
        reader = sqlite3.connect(spool_path(tmp_path))  # another connection sees only what is committed
        spooled = {row[0] for row in reader.execute("SELECT url FROM pending")}
        reader.close()
        assert spooled == {p.url for p in pages}
        feeder = crawl.stash[index_plugin.FEEDER_KEY]
        assert feeder.batches < len(pages)  # grouped into transactions, not one commit per page
    finally:
        crawl.interrupted = True
        await index_plugin.crawl_finished(crawl=crawl)


def page(number: int) -> Page:
    body = f"<html><head><title>Page {number}</title></head><body><p>hello {number}</p></body></html>"
    return make_page(
        f"http://h.test/{number}", body, fetched_at=datetime(2024, 5, 1, 12, 0, number % 60, tzinfo=UTC)
    )


async def start_group(args: list[str], env: dict[str, str] = ENV) -> asyncio.subprocess.Process:
    """A command in a process group of its own: a kill reaches its writer and workers too."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


async def kill_group_when(
    proc: asyncio.subprocess.Process, ready: Callable[[], bool], seconds: float
) -> bool:
    """SIGKILL the whole group once `ready()`; False when the command ended first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while proc.returncode is None and loop.time() < deadline:
        if ready():
            os.killpg(proc.pid, signal.SIGKILL)
            await asyncio.wait_for(proc.communicate(), 60)
            return None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.02)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    return f"ended before the kill with {proc.returncode}: {err.decode()}"


async def test_sigkill_during_the_parallel_catch_up_then_resume(site: Site, tmp_path: Path) -> None:
    site.loose_web(240, images=True)
    archive = tmp_path / "killed"
    plugins = [arg for name in PLUGINS for arg in ("--plugin", f"archiver_plugins.{name}")]
    config = tmp_path / "crawl.toml"
    config.write_text("[plugins.index]\nbatch_size = 15\ncrawl_share = 0.01\nprocesses = 2\n")
    args = ["crawl", site.url("/p0"), "-o", str(archive), "-c", str(config), *FAST, *plugins]
    spool = spool_path(archive)
    peak = 0

    def catching_up() -> bool:
        nonlocal peak
        waiting = pending_in(spool)
        peak = max(peak, waiting)
        # every page fetched, a round of the workers committed, more to come
        return site.hits.total() >= 240 and 0 < waiting < peak

    proc = await start_group(args)
    assert (failed := await kill_group_when(proc, catching_up, 120)) is None, failed
    proc = await start_crawl(args)  # a crawl whose pages were all fetched has nothing left to do
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    proc = await start_group(["reindex", "--pending", str(archive), "--processes", "2"], dict(os.environ))
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()

    pages = indexable_in_warcs(archive)
    assert len(pages) >= 230 and max(pages.values()) == 1
    urls, count = indexed(archive)
    assert set(urls) == set(pages) and max(urls.values()) == 1 and count == len(urls)
    assert pending_in(spool) == 0


async def test_sigkill_during_a_parallel_reindex_then_again(site: Site, crawl_archive: CrawlFn) -> None:
    site.loose_web(200, images=True)
    crawl = await crawl_archive(site.url("/p0"), plugins=PLUGINS)
    archive = crawl.archive
    pages = indexable_in_warcs(archive)
    building = archive / "index" / "tantivy.new"

    def one_round_committed() -> bool:
        with contextlib.suppress(OSError):
            return "segment_id" in (building / "meta.json").read_text()
        return False

    args = ["reindex", str(archive), "--processes", "2", "--batch-size", "10"]
    proc = await start_group(args, dict(os.environ))  # the installed plugins bring `reindex`
    assert (failed := await kill_group_when(proc, one_round_committed, 120)) is None, failed
    urls, count = indexed(archive)  # the index the rebuild was to replace still serves
    assert set(urls) == set(pages) and count == len(urls)

    proc = await start_group(args, dict(os.environ))
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    urls, count = indexed(archive)
    assert set(urls) == set(pages) and max(urls.values()) == 1 and count == len(urls)
    assert not building.exists() and not list((archive / "index").glob("reindex.sqlite*"))
