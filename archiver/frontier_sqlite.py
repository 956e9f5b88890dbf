"""The default frontier: the seen set and the per-host queues in `state.sqlite` inside the archive.

Memory stays flat however large the crawl grows: the seen set is the table's unique
index on disk, every host's queue is an index on disk (host, requisites first, then
order of discovery), and in memory there are only the schedule of hosts with queued URLs
(`schedule.HostSchedule`, a count per host) and a few leased heads of the hosts served
lately.  A host whose queue empties is forgotten.  Writes are executed in program order
on one connection and committed in batches (every `COMMIT_EVERY` changes or
`COMMIT_SECONDS`), so a crash loses at most a suffix of recent changes, never a change
without the ones before it.

That ordering is what makes resuming safe.  A URL moves queued -> in flight -> done or
failed.  The heads of a host are leased in a batch, marked in flight on disk, and that is
committed before the loop turns again, so before any response to one of them can reach
the archive; after a crash every URL that might have been archived is in flight (or done)
on disk.  `open()` leases those first, still in flight on disk, and remembers them in
`recovered`, so resume can look for their records in the WARC files and mark the ones
already archived done (`mark_done`) instead of fetching them twice; a run killed again
before that still finds them in flight.

SQLite runs on the event loop thread: each call is a few indexed statements on a
WAL database with ``synchronous=NORMAL`` (no fsync per commit), which costs less than
handing the work to a thread (see bench/bench_frontier.py).
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArchiveError
from .frontier import Holding, Item, Recovered, wait_for_schedule
from .model import Counts, LinkKind
from .politeness import HostLimiter
from .schedule import HostSchedule
from .sqlchunks import in_chunks
from .state import connect
from .state import read_counts as read_counts
from .urls import site_of

if TYPE_CHECKING:
    from .config import Config

SCHEMA_VERSION = 2
"""1: one queue in discovery order; 2: a queue per host (`host`, `prio`)."""

QUEUED, IN_FLIGHT, DONE, FAILED = 0, 1, 2, 3

COMMIT_EVERY = 2000
"""Changes per transaction at most: bounds what a crash can lose and the WAL's growth."""
COMMIT_SECONDS = 0.5
"""A pending change is committed within this time even when the crawl is idle."""
LEASE_SIZE = 8
"""Queued URLs of one host taken into memory (and marked in flight on disk) at once, at least;
twice the host's slots when that is more (a crawl of one host with 100 at once), up to
`MAX_LEASE_SIZE`."""
MAX_LEASE_SIZE = 256
LEASED_AT_MOST = 256
"""Leased heads in memory across hosts, about: with more hosts queued than that over the lease
size, each host leases fewer at a time, down to one.  Hosts take turns, so a host's second
head waits for every other host's turn; 8 heads for each of 10,000 hosts held 80,000 items
in memory and as many rows in flight, rows visited again long after their page had left
SQLite's cache."""
CHECKPOINT_PAGES = 16_384
"""WAL pages (64 MB) after which a commit copies them into the database file (SQLite's default is
1,000), or as many pages as the database holds when that is more: the WAL never outgrows the
database it logs, so a crawl's state and WAL take at most twice the state's size, or the state
plus 64 MB.  Each checkpoint reads every logged page back, writes it into the database and
fsyncs, on the event loop.  A page changed by many commits (a host's queue, its seen keys, the
totals) is copied once per checkpoint, and a crawl of many hosts changes each host's pages once
per round of the hosts: the longer the WAL, the more of a round one checkpoint covers.  At a
million URLs over 10,000 hosts, us a page (bench/README.md): 1,000 pages 125-129, 16,384 pages
117-119; in another hour 16,384 pages 110 against 105-107 with the database's size (75,000
pages at the end)."""
CHECKPOINT_GROWTH = 1.25
"""The threshold follows the database once it outgrows the last setting by this much."""
PAGE_CACHE_KIB = 8_192
"""SQLite's page cache for the crawl's connection (its default is 2,000 KiB).  A million URLs
fill some 500 inner pages of B-trees, as much as the default cache holds, so leaf pages pushed
them out and a look-up read them again; with 8 MiB every inner page stays.  At a million URLs
over 10,000 hosts: 101-102 us a page against 105-106; 16 MiB did no better (bench/README.md)."""

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
    taken_at REAL,
    host TEXT,
    prio INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS urls_host_queue ON urls(host, prio, id) WHERE state = 0;
CREATE INDEX IF NOT EXISTS urls_in_flight ON urls(id) WHERE state = 1;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value);
"""

_Head = tuple[int, str, Item]
"""(row id, key, item) of a leased URL."""


def _prio(kind: LinkKind) -> int:
    """Page requisites before pages within a host, so pages look whole early."""
    return 1 if kind is LinkKind.PAGE else 0


class SqliteFrontier:
    """A `Frontier` kept in an SQLite file; see the module docstring for the guarantees."""

    def __init__(self, path: Path, *, lease_size: int = LEASE_SIZE) -> None:
        self.path = path
        self.lease_size = lease_size
        self.recovered: list[Recovered] = []
        self._db: sqlite3.Connection | None = None
        self._queued: dict[str, int] = {}
        """Host -> URLs queued (on disk or leased in `_heads`); hosts with none are absent."""
        self._heads: dict[str, collections.deque[_Head]] = {}
        self._leased = 0
        self._taken: dict[Item, tuple[int, str, str]] = {}
        """Items handed out and not done -> (row id, key, host)."""
        self._state = {QUEUED: 0, IN_FLIGHT: 0, DONE: 0, FAILED: 0}
        """Logical totals: leased items still waiting in memory count as queued."""
        self._pending = 0
        self._first_pending = 0.0
        self._host_counts: dict[str, int] = {}
        self._hosts_counted_at = -COMMIT_SECONDS
        self._checkpoint_pages = 0
        self._timer: asyncio.TimerHandle | None = None
        self._soon: asyncio.Handle | None = None
        self._wake = asyncio.Event()
        self.schedule = HostSchedule(self._queued.__contains__)
        self.schedule.on_ready = self._wake.set

    def use_limiter(self, limiter: HostLimiter) -> bool:
        self.schedule.attach(limiter)
        self.lease_size = min(max(self.lease_size, 2 * limiter.concurrency), MAX_LEASE_SIZE)
        return True

    # -- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        try:
            db = connect(self.path)
            _migrate(db, self.path)
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ArchiveError(f"{self.path}: cannot open the crawl state ({exc})") from None
        self._db = db
        db.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        self._checkpoint_pages = 0
        self._checkpoint_past(db)
        version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if version is not None and int(version[0]) != SCHEMA_VERSION:
            raise ArchiveError(
                f"{self.path}: state of schema {version[0]}, this version reads {SCHEMA_VERSION}"
            )
        db.execute("BEGIN")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        rows = db.execute(
            "SELECT id, key, url, depth, redirects_left, referrer, kind, taken_at, host"
            " FROM urls WHERE state = 1 ORDER BY id"
        ).fetchall()
        self.recovered = [
            Recovered(key, _item(url or key, depth, left, referrer, kind), taken_at or 0.0)
            for _, key, url, depth, left, referrer, kind, taken_at, _ in rows
        ]
        # The interrupted URLs stay in flight on disk, leased first: until this run marks
        # them done or fetches them, a crash must find them in flight again, or the next
        # resume would fetch a page whose records are already archived.
        for row, recovered in zip(rows, self.recovered, strict=True):
            host = row[8] or site_of(recovered.item.url)
            self._heads.setdefault(host, collections.deque()).append((row[0], recovered.key, recovered.item))
            self._queued[host] = self._queued.get(host, 0) + 1
            self._leased += 1
        for host, count in db.execute("SELECT host, count(*) FROM urls WHERE state = 0 GROUP BY host"):
            self._queued[host] = self._queued.get(host, 0) + count
        for host in self._queued:
            self.schedule.offer(host)
        for state, count in db.execute("SELECT state, count(*) FROM urls GROUP BY state"):
            self._state[QUEUED if state == IN_FLIGHT else state] += count
        self._save_counts()
        db.execute("COMMIT")

    async def close(self) -> None:
        for handle in (self._timer, self._soon):
            if handle is not None:
                handle.cancel()
        self._timer = self._soon = None
        db, self._db = self._db, None
        if db is None:
            return
        if db.in_transaction:
            db.execute("COMMIT")
        db.execute("BEGIN")
        # Leased but never handed out: back to the queue, so the file says exactly what is left.
        db.executemany(
            "UPDATE urls SET state = 0, taken_at = NULL WHERE id = ?",
            ((head[0],) for heads in self._heads.values() for head in heads),
        )
        self._heads.clear()
        self._leased = 0
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
        queued = self._queued
        for key, item in entries:
            new = key not in known
            if new:
                known.add(key)
                host = site_of(item.url)
                rows.append(
                    (
                        key,
                        None if item.url == key else item.url,
                        item.depth,
                        item.redirects_left,
                        item.referrer,
                        str(item.kind),
                        host,
                        _prio(item.kind),
                    )
                )
                if host in queued:
                    queued[host] += 1
                else:
                    queued[host] = 1
                    self.schedule.offer(host)
            added.append(new)
        if rows:
            db.executemany(
                "INSERT INTO urls (key, url, depth, redirects_left, referrer, kind, host, prio)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._state[QUEUED] += len(rows)
            self._wrote(len(rows))
            self._wake.set()
        return added

    async def get(self) -> Item | None:
        while True:
            host = self.schedule.take(time.monotonic())
            if host is not None:
                return self._hand_out(host)
            if self._state[QUEUED] == 0 and self._state[IN_FLIGHT] == 0:
                self._wake.set()
                return None
            await wait_for_schedule(self._wake, self.schedule)

    def _hand_out(self, host: str) -> Item:
        heads = self._heads.get(host)
        if not heads:
            heads = self._take_lease(host)
        row_id, key, item = heads.popleft()
        if not heads:
            del self._heads[host]
        self._leased -= 1
        left = self._queued[host] - 1
        if left:
            self._queued[host] = left
        else:
            del self._queued[host]
        limiter = self.schedule.limiter
        if limiter is not None:
            limiter.taken(host)
        if left:
            self.schedule.offer(host)
        self._taken[item] = (row_id, key, host)
        self._state[QUEUED] -= 1
        self._state[IN_FLIGHT] += 1
        return item

    async def give_back(self, item: Item, again: Item | None = None) -> bool:
        """Still in flight on disk, leased again: a crash finds it where `get` left it."""
        row_id, key, host = self._taken.pop(item)
        self._heads.setdefault(host, collections.deque()).appendleft((row_id, key, again or item))
        self._leased += 1
        self._queued[host] = self._queued.get(host, 0) + 1
        self._state[IN_FLIGHT] -= 1
        self._state[QUEUED] += 1
        if self.schedule.limiter is not None:
            self.schedule.limiter.released(host)
        self.schedule.reschedule(host)
        self._wake.set()
        return True

    async def done(self, item: Item, *, failed: bool = False) -> None:
        db = self._write()
        row_id, _key, host = self._taken.pop(item)
        state = FAILED if failed else DONE
        db.execute("UPDATE urls SET state = ? WHERE id = ?", (state, row_id))
        self._state[IN_FLIGHT] -= 1
        self._state[state] += 1
        self._wrote(1)
        if self.schedule.limiter is not None:
            self.schedule.limiter.released(host)
        self.schedule.reschedule(host)
        self._wake.set()

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        """The leased heads, then the queue on disk in pages of `lease_size` rows; the rows refused
        are deleted (the rule that refused them refuses them again if a link brings them back)."""
        db = self._write()
        dropped: list[tuple[Item, str]] = []
        gone: list[tuple[int]] = []
        per_host: collections.Counter[str] = collections.Counter()
        for host, heads in list(self._heads.items()):
            kept: collections.deque[_Head] = collections.deque()
            for row_id, key, item in heads:
                reason = refusal(item)
                if reason is None:
                    kept.append((row_id, key, item))
                else:
                    dropped.append((item, reason))
                    gone.append((row_id,))
                    per_host[host] += 1
            self._leased -= len(heads) - len(kept)
            if kept:
                self._heads[host] = kept
            else:
                del self._heads[host]
        last = 0
        while True:
            rows = db.execute(
                "SELECT id, key, url, depth, redirects_left, referrer, kind, host FROM urls"
                " WHERE state = 0 AND id > ? ORDER BY id LIMIT ?",
                (last, self.lease_size),
            ).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            for row_id, key, url, depth, left, referrer, kind, host in rows:
                item = _item(url or key, depth, left, referrer, kind)
                reason = refusal(item)
                if reason is not None:
                    dropped.append((item, reason))
                    gone.append((row_id,))
                    per_host[host or site_of(item.url)] += 1
        db.executemany("DELETE FROM urls WHERE id = ?", gone)
        for host, count in per_host.items():
            left = self._queued.get(host, 0) - count
            if left > 0:
                self._queued[host] = left
            else:
                self._queued.pop(host, None)
            self.schedule.reschedule(host)
        self._state[QUEUED] -= len(dropped)
        self._wrote(len(dropped))
        return dropped

    async def share(self, command: dict[str, Any], config: Config) -> None:
        return None  # one process: nobody else to tell

    async def shared_commands(self) -> list[dict[str, Any]]:
        return []

    async def confirm_held(self, command: dict[str, Any], on_wire: int) -> None:
        return None

    async def held_everywhere(self, command: dict[str, Any]) -> Holding:
        return Holding()

    async def counts(self) -> Counts:
        s = self._state
        return Counts(s[QUEUED], s[IN_FLIGHT], s[DONE], s[FAILED], sum(s.values()), s[IN_FLIGHT])

    # -- resume ------------------------------------------------------------------------

    async def mark_done(self, keys: Iterable[str]) -> int:
        """Keys of items handed out by `get` and not yet `done` are left alone."""
        db = self._write()
        wanted = set(keys) - {key for _, key, _ in self._taken.values()}
        if not wanted:
            return 0
        for host in list(self._heads):
            heads = self._heads[host]
            kept = collections.deque(head for head in heads if head[1] not in wanted)
            self._leased -= len(heads) - len(kept)
            if kept:
                self._heads[host] = kept
            else:
                del self._heads[host]
        marked = 0
        for chunk, marks in in_chunks(sorted(wanted)):
            cursor = db.execute(
                f"UPDATE urls SET state = 2 WHERE key IN ({marks}) AND state IN (0, 1)"
                " RETURNING host, url, key",
                chunk,
            )
            for host, url, key in cursor.fetchall():
                self._unqueue(host or site_of(url or key))
                marked += 1
        self._state[QUEUED] -= marked
        self._state[DONE] += marked
        self._wrote(marked)
        return marked

    async def requeue(self, keys: Iterable[str]) -> int:
        db = self._write()
        moved = 0
        for key in keys:
            row = db.execute(
                "UPDATE urls SET state = 0 WHERE key = ? AND state = 3 RETURNING host, url", (key,)
            ).fetchone()
            if row is None:
                continue
            host = row[0] or site_of(row[1] or key)
            self._queued[host] = self._queued.get(host, 0) + 1
            self.schedule.offer(host)
            moved += 1
        self._state[FAILED] -= moved
        self._state[QUEUED] += moved
        self._wrote(moved)
        if moved:
            self._wake.set()
        return moved

    async def flush(self) -> None:
        """Commit what is pending now (tests and status use it; the timer does it otherwise)."""
        self._commit()

    # -- internals ---------------------------------------------------------------------

    def _unqueue(self, host: str) -> None:
        left = self._queued.get(host, 0) - 1
        if left > 0:
            self._queued[host] = left
        else:
            self._queued.pop(host, None)
            self.schedule.forget(host)

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
        for handle in (self._timer, self._soon):
            if handle is not None:
                handle.cancel()
        self._timer = self._soon = None
        db = self._db
        if db is None or not db.in_transaction:
            return
        self._save_counts(db)
        db.execute("COMMIT")
        self._pending = 0
        self._checkpoint_past(db)

    def _checkpoint_past(self, db: sqlite3.Connection) -> None:
        """Keep the WAL's checkpoint threshold at `CHECKPOINT_PAGES` or the database's size."""
        pages = max(CHECKPOINT_PAGES, db.execute("PRAGMA page_count").fetchone()[0])
        if pages >= self._checkpoint_pages * CHECKPOINT_GROWTH:
            db.execute(f"PRAGMA wal_autocheckpoint={pages}")
            self._checkpoint_pages = pages

    def _save_counts(self, db: sqlite3.Connection | None = None) -> None:
        """Store the totals as the file will hold them after this commit, for `archiver status`."""
        db = db or self._db
        assert db is not None
        values = {
            "count_queued": self._state[QUEUED] - self._leased,
            "count_in_flight": self._leased + len(self._taken),
            "count_fetching": len(self._taken),
            "count_done": self._state[DONE],
            "count_failed": self._state[FAILED],
            "updated_at": time.time(),
        }
        if self.schedule.limiter is not None:
            # one pass over every scheduled host: at most every COMMIT_SECONDS, not at every
            # commit (a crawl of thousands of hosts commits after each lease)
            now = time.monotonic()
            if now - self._hosts_counted_at >= COMMIT_SECONDS:
                hosts = self.schedule.host_counts(now)
                self._host_counts = {f"hosts_{name}": n for name, n in hosts._asdict().items()}
                self._hosts_counted_at = now
            values |= self._host_counts
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())

    def _existing(self, db: sqlite3.Connection, keys: list[str]) -> list[str]:
        found: list[str] = []
        for chunk, marks in in_chunks(keys):
            found.extend(row[0] for row in db.execute(f"SELECT key FROM urls WHERE key IN ({marks})", chunk))
        return found

    def _take_lease(self, host: str) -> collections.deque[_Head]:
        """Move the next queued URLs of `host` into memory, marked in flight on disk."""
        db = self._write()
        rows = db.execute(
            "SELECT id, key, url, depth, redirects_left, referrer, kind FROM urls"
            " WHERE host = ? AND state = 0 ORDER BY prio, id LIMIT ?",
            (host, max(1, min(self.lease_size, LEASED_AT_MOST // len(self._queued)))),
        ).fetchall()
        if not rows:
            raise ArchiveError(f"{self.path}: the queue of {host} and the table disagree")
        ids = [row[0] for row in rows]
        db.execute(
            f"UPDATE urls SET state = 1, taken_at = ? WHERE id IN ({','.join('?' * len(ids))})",
            (time.time(), *ids),
        )
        heads = self._heads[host] = collections.deque(
            (row_id, key, _item(url or key, depth, left, referrer, kind))
            for row_id, key, url, depth, left, referrer, kind in rows
        )
        self._leased += len(heads)
        self._pending += len(heads)
        # Durable before any response to them can be handled: the commit runs at the next
        # turn of the loop, before the I/O that brings a response.  After a crash, every URL
        # that may have reached the WARC is in flight on disk, so resume looks for it there.
        if self._soon is None:
            self._soon = asyncio.get_running_loop().call_soon(self._commit)
        return heads


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring a state file of schema 1 (one queue) to schema 2 (a queue per host), in one transaction."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables or "urls" not in tables:
        return
    version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
    if version is None or int(version[0]) != 1:
        return
    db.create_function("site_of", 1, site_of, deterministic=True)
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("ALTER TABLE urls ADD COLUMN host TEXT")
        db.execute("ALTER TABLE urls ADD COLUMN prio INTEGER NOT NULL DEFAULT 1")
        db.execute(
            "UPDATE urls SET host = site_of(coalesce(url, key)),"
            " prio = CASE kind WHEN 'page' THEN 1 ELSE 0 END WHERE state <> 2"
        )
        db.execute("DROP INDEX IF EXISTS urls_queued")
        db.execute("CREATE INDEX urls_host_queue ON urls(host, prio, id) WHERE state = 0")
        db.execute("UPDATE meta SET value = 2 WHERE name = 'schema'")
        db.execute("COMMIT")
    except sqlite3.DatabaseError:
        db.execute("ROLLBACK")
        raise


def _item(url: str, depth: int, redirects_left: int, referrer: str | None, kind: str) -> Item:
    return Item(url, depth, redirects_left, referrer, LinkKind(kind))
