"""The SQLite frontier: the Frontier protocol, persistence across runs, and crashes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from archiver import frontier_sqlite
from archiver.config import Config
from archiver.errors import ConfigError
from archiver.frontier import Item, MemoryFrontier
from archiver.frontier_sqlite import LEASED_AT_MOST, SqliteFrontier, read_counts
from archiver.hookspecs import hookimpl
from archiver.layout import STATE_NAME
from archiver.model import LinkKind
from archiver.runner import make_frontier
from archiver.testing import CrawlFn, Site


def entries(*names: str) -> list[tuple[str, Item]]:
    return [(f"http://h/{n}", Item(f"http://h/{n}")) for n in names]


@pytest.fixture
async def frontier(tmp_path: Path) -> SqliteFrontier:
    f = SqliteFrontier(tmp_path / STATE_NAME, lease_size=3)
    await f.open()
    return f


async def test_add_dedups_and_get_is_fifo(frontier: SqliteFrontier) -> None:
    assert await frontier.add(entries("a", "b", "a")) == [True, True, False]
    assert await frontier.add(entries("b", "c", "d", "e")) == [False, True, True, True]
    urls = []
    while (item := await frontier.get()) is not None:
        urls.append(item.url)
        await frontier.done(item)
    assert urls == [f"http://h/{n}" for n in "abcde"]
    counts = await frontier.counts()
    assert (counts.queued, counts.in_flight, counts.done, counts.seen) == (0, 0, 5, 5)
    await frontier.close()


async def test_items_keep_their_fields(frontier: SqliteFrontier) -> None:
    item = Item("http://h/x?b=1&a=2", depth=3, redirects_left=2, referrer="http://h/", kind=LinkKind.IMPORT)
    await frontier.add([("http://h/x?a=2&b=1", item)])
    assert await frontier.get() == item
    await frontier.close()


async def test_get_waits_for_in_flight_work_then_ends(frontier: SqliteFrontier) -> None:
    await frontier.add(entries("a"))
    first = await frontier.get()
    assert first is not None
    waiter = asyncio.create_task(frontier.get())
    await asyncio.sleep(0.05)
    assert not waiter.done()  # nothing queued, but `a` may still add links
    await frontier.add(entries("b"))
    second = await asyncio.wait_for(waiter, 1)
    assert second is not None and second.url == "http://h/b"
    ender = asyncio.create_task(frontier.get())
    await frontier.done(first)
    await asyncio.sleep(0.05)
    assert not ender.done()
    await frontier.done(second, failed=True)
    assert await asyncio.wait_for(ender, 1) is None
    counts = await frontier.counts()
    assert (counts.done, counts.failed) == (1, 1)
    await frontier.close()


async def test_state_survives_close_and_in_flight_is_requeued(tmp_path: Path) -> None:
    path = tmp_path / STATE_NAME
    f = SqliteFrontier(path, lease_size=2)
    await f.open()
    await f.add(entries("a", "b", "c", "d", "e"))
    a, b, c = await f.get(), await f.get(), await f.get()
    assert a is not None and b is not None and c is not None
    await f.done(a)
    await f.done(b, failed=True)
    await f.close()  # c never finished: it was in flight
    assert read_counts(path) == read_counts(path)
    saved = read_counts(path)
    assert (saved.done, saved.failed, saved.in_flight, saved.queued) == (1, 1, 1, 2)

    again = SqliteFrontier(path)
    await again.open()
    assert [r.item.url for r in again.recovered] == ["http://h/c"]
    counts = await again.counts()
    assert (counts.queued, counts.in_flight, counts.done, counts.failed, counts.seen) == (3, 0, 1, 1, 5)
    assert await again.add(entries("a", "f")) == [False, True]
    order = []
    while (item := await again.get()) is not None:
        order.append(item.url.rsplit("/", 1)[1])
        await again.done(item)
    assert order == ["c", "d", "e", "f"]  # the interrupted one first, queue order kept
    await again.close()


async def test_with_many_hosts_queued_each_host_leases_fewer_heads(tmp_path: Path) -> None:
    """Hosts take turns, so a host's second head would wait for every other host: with
    more hosts than LEASED_AT_MOST / lease_size, a lease is one row."""
    path = tmp_path / STATE_NAME
    f = SqliteFrontier(path, lease_size=8)
    await f.open()
    few = [(f"http://a{h}/{n}", Item(f"http://a{h}/{n}")) for h in range(4) for n in range(5)]
    await f.add(few)
    first = await f.get()
    assert first is not None
    await f.flush()
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM urls WHERE state = 1").fetchone() == (5,)
    many = [(f"http://b{h}/{n}", Item(f"http://b{h}/{n}")) for h in range(LEASED_AT_MOST) for n in range(3)]
    await f.add(many)
    items = [await f.get() for _ in range(4 + LEASED_AT_MOST)]
    await f.flush()
    # the first host's lease of all its 5 rows, taken while 4 hosts were queued; then one row a host
    assert db.execute("SELECT count(*) FROM urls WHERE state = 1").fetchone() == (5 + 3 + LEASED_AT_MOST,)
    seen = {item.url for item in items if item is not None} | {first.url}
    assert len(seen) == 5 + LEASED_AT_MOST
    db.close()
    await f.close()


async def test_mark_done_skips_queued_urls(frontier: SqliteFrontier) -> None:
    await frontier.add(entries("a", "b", "c"))
    assert await frontier.mark_done(["http://h/b", "http://h/zzz"]) == 1
    urls = []
    while (item := await frontier.get()) is not None:
        urls.append(item.url)
        await frontier.done(item)
    assert urls == ["http://h/a", "http://h/c"]
    assert (await frontier.counts()).done == 3
    await frontier.close()


async def test_status_sees_commits_of_a_running_frontier(frontier: SqliteFrontier) -> None:
    await frontier.add(entries("a", "b"))
    item = await frontier.get()
    assert item is not None
    await frontier.done(item)
    await frontier.flush()
    counts = read_counts(frontier.path)
    assert (counts.done, counts.queued + counts.in_flight) == (1, 1)
    await frontier.close()


_KILLED_WRITER = """
import asyncio, os, sys
from pathlib import Path
from archiver.frontier import Item
from archiver.frontier_sqlite import SqliteFrontier

async def main() -> None:
    f = SqliteFrontier(Path(sys.argv[1]), lease_size=4)
    await f.open()
    await f.add([(f"k{i}", Item(f"http://h/{i}")) for i in range(10)])
    for _ in range(3):
        item = await f.get()
        await f.done(item)
    await f.flush()
    item = await f.get()          # leased and in flight, then never finished
    await f.add([(f"k{i}", Item(f"http://h/{i}")) for i in range(10, 20)])  # not committed
    os._exit(9)

asyncio.run(main())
"""


async def test_the_wal_is_copied_into_the_database_past_checkpoint_pages_or_the_database_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The WAL grows past CHECKPOINT_PAGES only as the database does, and never much past it;
    with a larger setting it grows past the database."""
    frame = 4096 + 24  # a WAL frame: a page and its header

    async def wal_and_database_pages(name: str) -> tuple[int, int]:
        path = tmp_path / name / STATE_NAME
        path.parent.mkdir()
        f = SqliteFrontier(path)
        await f.open()
        for batch in range(60):
            urls = [f"http://h{batch}/a-page-with-a-long-name-{n}.html" for n in range(50)]
            await f.add([(url, Item(url)) for url in urls])
            await f.flush()
        wal = os.stat(f"{path}-wal").st_size // frame
        await f.close()
        return wal, path.stat().st_size // 4096

    monkeypatch.setattr(frontier_sqlite, "CHECKPOINT_PAGES", 32)
    wal, database = await wal_and_database_pages("small")
    one_commit = 20  # frames a commit of 50 rows writes, at most
    assert database > 2 * 32
    assert 32 + one_commit < wal <= database + one_commit
    monkeypatch.setattr(frontier_sqlite, "CHECKPOINT_PAGES", 100_000)
    wal, database = await wal_and_database_pages("large")
    assert wal > database + one_commit


async def test_a_killed_process_loses_only_uncommitted_changes(tmp_path: Path) -> None:
    path = tmp_path / STATE_NAME
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_KILLED_WRITER))
    proc = await asyncio.to_thread(subprocess.run, [sys.executable, str(script), str(path)], timeout=30)
    assert proc.returncode == 9
    f = SqliteFrontier(path)
    await f.open()
    counts = await f.counts()
    assert (counts.done, counts.queued, counts.seen) == (3, 7, 10)
    # k0-k3 were leased together (in flight on disk); k3 was never finished: it is checked on resume.
    assert [r.key for r in f.recovered] == ["k3"]
    # Killed again before that run marked k3 done or fetched it: the next resume still checks it.
    again = SqliteFrontier(path)
    await again.open()
    assert [r.key for r in again.recovered] == ["k3"]
    assert (await again.counts()).queued == 7
    await again.close()
    await f.close()


async def test_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / STATE_NAME
    path.write_bytes(b"not sqlite at all" * 100)
    f = SqliteFrontier(path)
    with pytest.raises(Exception, match="cannot open the crawl state"):
        await f.open()
    await f.close()


def test_make_frontier_picks_sqlite_by_default(tmp_path: Path) -> None:
    assert isinstance(make_frontier(Config(), tmp_path), SqliteFrontier)
    assert isinstance(make_frontier(Config(frontier="memory"), tmp_path), MemoryFrontier)


async def test_crawl_with_sqlite_frontier_matches_memory(site: Site, crawl_archive: CrawlFn) -> None:
    pages = 60
    for i in range(pages):
        site.page(f"/p{i}", links=[f"/p{(i * 7 + 1) % pages}", f"/p{(i + 1) % pages}", "/missing"])
    crawl = await crawl_archive(site.url("/p0"), frontier="sqlite", max_tasks=4)
    assert crawl.stats["pages"] == pages + 1
    assert all(n == 1 for n in site.hits.values())
    counts = read_counts(crawl.archive / STATE_NAME)
    assert (counts.done, counts.queued, counts.in_flight) == (pages + 1, 0, 0)
    db = sqlite3.connect(crawl.archive / STATE_NAME)
    assert db.execute("SELECT count(*) FROM urls WHERE state != 2").fetchone() == (0,)
    db.close()


async def test_hook_make_frontier(site: Site, crawl_archive: CrawlFn) -> None:
    """A plugin's frontier serves the URLs it answers for; the core's are the fallback."""
    made: list[tuple[str, Path]] = []

    class Provider:
        @hookimpl
        def make_frontier(self, config: Config, archive: Path) -> MemoryFrontier | None:
            if not config.frontier.startswith("test://"):
                return None
            made.append((config.frontier, archive))
            return MemoryFrontier()

    site.page("/", links=["/a"])
    site.page("/a")
    crawl = await crawl_archive(site.url("/"), extra=[Provider()], frontier="test://queue")
    assert made == [("test://queue", crawl.archive)] and crawl.stats["pages"] == 2
    crawl = await crawl_archive(site.url("/"), extra=[Provider()], frontier="sqlite")
    assert len(made) == 1 and (crawl.archive / STATE_NAME).is_file()
    with pytest.raises(ConfigError, match="'test://queue': no plugin provides it"):
        await crawl_archive(site.url("/"), frontier="test://queue")
