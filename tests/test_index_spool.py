"""The spool keeps the backlog compressed, and gives its room back once the writer caught up."""

from __future__ import annotations

import sqlite3
import sys
import zlib
from pathlib import Path

from archiver_plugins.index.spool import Spool, pending_in
from archiver_plugins.index.store import Capture, open_engine, spool_path
from archiver_plugins.index.writer import Control, run

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from index_pages import pages

PAGES = 300


def captures(count: int) -> list[Capture]:
    return [Capture(url, "20240501120000", 200, "text/html", "utf-8", body) for url, body in pages(count)]


def spool_bytes(archive: Path) -> int:
    path = spool_path(archive)
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def test_pages_are_spooled_compressed_and_read_back_as_they_were(tmp_path: Path) -> None:
    held = captures(PAGES)
    spool = Spool(spool_path(tmp_path))
    spool.add(held)
    assert [capture for _, capture in spool.read(after=0, limit=PAGES)] == held
    ids = [row_id for row_id, _ in spool.read(after=0, limit=PAGES)]
    assert list(spool.rows(ids[:3])) == held[:3]
    assert [capture for _, capture in spool.rows_with_ids(ids[-2:])] == held[-2:]
    spool.close()
    packed = sum(len(zlib.compress(c.content, 1)) for c in held)
    assert spool_bytes(tmp_path) < 1.2 * packed + 64 * 1024 < sum(len(c.content) for c in held)


def test_a_drained_spool_gives_its_room_back(tmp_path: Path) -> None:
    spool = Spool(spool_path(tmp_path))
    spool.add(captures(PAGES))
    spool.close()
    full = spool_bytes(tmp_path)
    assert full > 500_000
    run(tmp_path, 100, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    assert pending_in(spool_path(tmp_path)) == 0
    assert spool_bytes(tmp_path) < 64 * 1024 < full
    index = open_engine(tmp_path)
    assert index.pages() == PAGES
    index.close()


def test_a_spool_of_plain_pages_is_read_and_shrunk(tmp_path: Path) -> None:
    """A spool an earlier version wrote (pages stored as they are, no incremental vacuum)."""
    path = spool_path(tmp_path)
    path.parent.mkdir(parents=True)
    held = captures(PAGES)
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE pending (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL,"
        " time TEXT NOT NULL, status INTEGER NOT NULL, content_type TEXT NOT NULL,"
        " encoding TEXT, content BLOB NOT NULL)"
    )
    db.executemany(
        "INSERT INTO pending (url, time, status, content_type, encoding, content) VALUES (?, ?, ?, ?, ?, ?)",
        [(c.url, c.time, c.status, c.content_type, c.encoding, c.content) for c in held],
    )
    db.commit()
    db.close()
    full = spool_bytes(tmp_path)
    spool = Spool(path)
    assert [capture for _, capture in spool.read(after=0, limit=3)] == held[:3]
    spool.add(held[:1])  # a page spooled by this version beside the plain ones
    assert [capture for _, capture in spool.read(after=PAGES, limit=3)] == held[:1]
    spool.close()
    run(tmp_path, 100, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    assert spool_bytes(tmp_path) < 64 * 1024 < full
    index = open_engine(tmp_path)
    assert index.pages() == PAGES
    index.close()
