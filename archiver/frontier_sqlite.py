"""The default frontier: the seen set and the queue in `state.sqlite` inside the archive.

Memory stays flat however large the crawl grows: the seen set is the table's unique
index on disk, and only a small window of the queue (one leased batch) is held in
memory.  Writes are executed in program order on one connection and committed in
batches (every `COMMIT_EVERY` changes or `COMMIT_SECONDS`), so a crash loses at most a
suffix of recent changes, never a change without the ones before it.

That ordering is what makes resuming safe.  A URL moves queued -> in flight -> done or
failed.  Items are leased from the queue in batches and the lease is committed as the
"in flight" state before the first of them is handed out, so after a crash every URL
that might have been fetched is in flight (or done) on disk.  `open()` leases those
first, still in flight on disk, and remembers them in `recovered`, so resume can look for
their records in the WARC files and mark the ones already archived done (`mark_done`)
instead of fetching them twice; a run killed again before that still finds them in flight.

SQLite runs on the event loop thread: each call is a few indexed statements on a
WAL database with ``synchronous=NORMAL`` (no fsync per commit), which costs less than
handing the work to a thread (see bench/bench_frontier.py).
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArchiveError
from .frontier import Item, Recovered
from .model import Counts, LinkKind
from .state import STATE_NAME as STATE_NAME
from .state import connect
from .state import read_counts as read_counts

if TYPE_CHECKING:
    from .config import Config

SCHEMA_VERSION = 1

QUEUED, IN_FLIGHT, DONE, FAILED = 0, 1, 2, 3

COMMIT_EVERY = 2000
"""Changes per transaction at most: bounds what a crash can lose and the WAL's growth."""
COMMIT_SECONDS = 0.5
"""A pending change is committed within this time even when the crawl is idle."""
LEASE_SIZE = 256
"""Queued items taken into memory (and marked in flight on disk) at once."""
_IN_CHUNK = 500
"""Keys per `IN (...)` look-up: far below SQLite's limit on bound parameters."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    url TEXT,
    depth INTEGER NOT NULL,
    redirects_left INTEGER NOT NULL,
    referrer TEXT,
    kind TEXT NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    taken_at REAL
);
CREATE INDEX IF NOT EXISTS urls_queued ON urls(id) WHERE state = 0;
CREATE INDEX IF NOT EXISTS urls_in_flight ON urls(id) WHERE state = 1;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value);
"""


class SqliteFrontier:
    """A `Frontier` kept in an SQLite file; see the module docstring for the guarantees."""

    def __init__(self, path: Path, *, lease_size: int = LEASE_SIZE) -> None:
        self.path = path
        self.lease_size = lease_size
        self.recovered: list[Recovered] = []
        self._db: sqlite3.Connection | None = None
        self._lease: collections.deque[tuple[int, str, Item]] = collections.deque()
        self._taken: dict[Item, tuple[int, str]] = {}
        self._state = {QUEUED: 0, IN_FLIGHT: 0, DONE: 0, FAILED: 0}
        """Logical totals: leased items still waiting in memory count as queued."""
        self._pending = 0
        self._first_pending = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._changed = asyncio.Condition()

    # -- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        try:
            db = connect(self.path)
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"{self.path}: cannot open the crawl state ({exc})") from None
        self._db = db
        version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if version is not None and int(version[0]) != SCHEMA_VERSION:
            raise ArchiveError(
                f"{self.path}: state of schema {version[0]}, this version reads {SCHEMA_VERSION}"
            )
        db.execute("BEGIN")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        rows = db.execute(
            "SELECT id, key, url, depth, redirects_left, referrer, kind, taken_at"
            " FROM urls WHERE state = 1 ORDER BY id"
        ).fetchall()
        self.recovered = [
            Recovered(key, _item(url or key, depth, left, referrer, kind), taken_at or 0.0)
            for _, key, url, depth, left, referrer, kind, taken_at in rows
        ]
        # The interrupted URLs stay in flight on disk, leased first: until this run marks
        # them done or fetches them, a crash must find them in flight again, or the next
        # resume would fetch a page whose records are already archived.
        self._lease.extend((row[0], r.key, r.item) for row, r in zip(rows, self.recovered, strict=True))
        for state, count in db.execute("SELECT state, count(*) FROM urls GROUP BY state"):
            self._state[QUEUED if state == IN_FLIGHT else state] += count
        self._save_counts()
        db.execute("COMMIT")

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        db, self._db = self._db, None
        if db is None:
            return
        if db.in_transaction:
            db.execute("COMMIT")
        db.execute("BEGIN")
        # Leased but never handed out: back to the queue, so the file says exactly what is left.
        db.executemany(
            "UPDATE urls SET state = 0, taken_at = NULL WHERE id = ?", ((i,) for i, _, _ in self._lease)
        )
        self._lease.clear()
        self._save_counts(db)
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()

    # -- the protocol ------------------------------------------------------------------

    async def add(self, entries: Sequence[tuple[str, Item]]) -> list[bool]:
        db = self._write()
        keys = [key for key, _ in entries]
        known = set(self._existing(db, keys))
        added: list[bool] = []
        rows = []
        for key, item in entries:
            new = key not in known
            if new:
                known.add(key)
                rows.append(
                    (
                        key,
                        None if item.url == key else item.url,
                        item.depth,
                        item.redirects_left,
                        item.referrer,
                        str(item.kind),
                    )
                )
            added.append(new)
        if rows:
            db.executemany(
                "INSERT INTO urls (key, url, depth, redirects_left, referrer, kind)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._state[QUEUED] += len(rows)
            self._wrote(len(rows))
            async with self._changed:
                self._changed.notify_all()
        return added

    async def get(self) -> Item | None:
        async with self._changed:
            while not self._lease:
                if self._state[QUEUED] > 0:
                    self._take_lease()
                    continue
                if self._state[IN_FLIGHT] == 0:
                    self._changed.notify_all()
                    return None
                await self._changed.wait()
            row_id, key, item = self._lease.popleft()
            self._taken[item] = (row_id, key)
            self._state[QUEUED] -= 1
            self._state[IN_FLIGHT] += 1
            return item

    async def done(self, item: Item, *, failed: bool = False) -> None:
        db = self._write()
        row_id, _key = self._taken.pop(item)
        state = FAILED if failed else DONE
        db.execute("UPDATE urls SET state = ? WHERE id = ?", (state, row_id))
        self._state[IN_FLIGHT] -= 1
        self._state[state] += 1
        self._wrote(1)
        async with self._changed:
            self._changed.notify_all()

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        """The queue is read in pages of `LEASE_SIZE` rows; the rows refused are deleted (the
        rule that refused them refuses them again if a link brings them back)."""
        db = self._write()
        dropped: list[tuple[Item, str]] = []
        kept: collections.deque[tuple[int, str, Item]] = collections.deque()
        for row_id, key, item in self._lease:
            reason = refusal(item)
            if reason is None:
                kept.append((row_id, key, item))
            else:
                dropped.append((item, reason))
                db.execute("DELETE FROM urls WHERE id = ?", (row_id,))
        self._lease = kept
        last = 0
        while True:
            rows = db.execute(
                "SELECT id, key, url, depth, redirects_left, referrer, kind FROM urls"
                " WHERE state = 0 AND id > ? ORDER BY id LIMIT ?",
                (last, self.lease_size),
            ).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            gone = []
            for row_id, key, url, depth, left, referrer, kind in rows:
                item = _item(url or key, depth, left, referrer, kind)
                reason = refusal(item)
                if reason is not None:
                    dropped.append((item, reason))
                    gone.append((row_id,))
            db.executemany("DELETE FROM urls WHERE id = ?", gone)
        self._state[QUEUED] -= len(dropped)
        self._wrote(len(dropped))
        return dropped

    async def share(self, command: dict[str, Any], config: Config) -> None:
        return None  # one process: nobody else to tell

    async def shared_commands(self) -> list[dict[str, Any]]:
        return []

    async def counts(self) -> Counts:
        s = self._state
        return Counts(s[QUEUED], s[IN_FLIGHT], s[DONE], s[FAILED], sum(s.values()), s[IN_FLIGHT])

    # -- resume ------------------------------------------------------------------------

    async def mark_done(self, keys: Iterable[str]) -> int:
        """Keys of items handed out by `get` and not yet `done` are left alone."""
        db = self._write()
        wanted = set(keys) - {key for _, key in self._taken.values()}
        if not wanted:
            return 0
        self._lease = collections.deque(entry for entry in self._lease if entry[1] not in wanted)
        marked = 0
        for chunk, marks in _chunks(sorted(wanted)):
            cursor = db.execute(
                f"UPDATE urls SET state = 2 WHERE key IN ({marks}) AND state IN (0, 1)", chunk
            )
            marked += cursor.rowcount
        self._state[QUEUED] -= marked
        self._state[DONE] += marked
        self._wrote(marked)
        return marked

    async def requeue(self, keys: Iterable[str]) -> int:
        db = self._write()
        moved = 0
        for key in keys:
            moved += db.execute("UPDATE urls SET state = 0 WHERE key = ? AND state = 3", (key,)).rowcount
        self._state[FAILED] -= moved
        self._state[QUEUED] += moved
        self._wrote(moved)
        return moved

    async def flush(self) -> None:
        """Commit what is pending now (tests and status use it; the timer does it otherwise)."""
        self._commit()

    # -- internals ---------------------------------------------------------------------

    def _write(self) -> sqlite3.Connection:
        db = self._db
        if db is None:
            raise ArchiveError(f"{self.path}: the frontier is not open")
        if not db.in_transaction:
            db.execute("BEGIN")
            self._first_pending = time.monotonic()
        return db

    def _wrote(self, changes: int) -> None:
        self._pending += changes
        if self._pending >= COMMIT_EVERY or time.monotonic() - self._first_pending >= COMMIT_SECONDS:
            self._commit()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(COMMIT_SECONDS, self._commit)

    def _commit(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        db = self._db
        if db is None or not db.in_transaction:
            return
        self._save_counts(db)
        db.execute("COMMIT")
        self._pending = 0

    def _save_counts(self, db: sqlite3.Connection | None = None) -> None:
        """Store the totals as the file will hold them after this commit, for `archiver status`."""
        db = db or self._db
        assert db is not None
        leased = len(self._lease) + len(self._taken)
        values = {
            "count_queued": self._state[QUEUED] - len(self._lease),
            "count_in_flight": leased,
            "count_fetching": len(self._taken),
            "count_done": self._state[DONE],
            "count_failed": self._state[FAILED],
            "updated_at": time.time(),
        }
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())

    def _existing(self, db: sqlite3.Connection, keys: list[str]) -> list[str]:
        found: list[str] = []
        for chunk, marks in _chunks(keys):
            found.extend(row[0] for row in db.execute(f"SELECT key FROM urls WHERE key IN ({marks})", chunk))
        return found

    def _take_lease(self) -> None:
        """Move the next batch of queued URLs into memory, marked in flight on disk."""
        db = self._write()
        rows = db.execute(
            "SELECT id, key, url, depth, redirects_left, referrer, kind FROM urls"
            " WHERE state = 0 ORDER BY id LIMIT ?",
            (self.lease_size,),
        ).fetchall()
        if not rows:
            raise ArchiveError(f"{self.path}: the queue count and the table disagree")
        db.execute(
            "UPDATE urls SET state = 1, taken_at = ? WHERE state = 0 AND id <= ?",
            (time.time(), rows[-1][0]),
        )
        for row_id, key, url, depth, left, referrer, kind in rows:
            self._lease.append((row_id, key, _item(url or key, depth, left, referrer, kind)))
        # Durable before any of them is fetched: after a crash, every URL that may have
        # reached the WARC is in flight on disk, so resume looks for it there.
        self._commit()


def _chunks(keys: list[str]) -> Iterator[tuple[list[str], str]]:
    """`keys` in slices of `_IN_CHUNK`, each with the ``?,?,...`` of its ``IN (...)``."""
    for start in range(0, len(keys), _IN_CHUNK):
        chunk = keys[start : start + _IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


def _item(url: str, depth: int, redirects_left: int, referrer: str | None, kind: str) -> Item:
    return Item(url, depth, redirects_left, referrer, LinkKind(kind))
