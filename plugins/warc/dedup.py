"""The payloads already stored in an archive, on disk: what revisit records point to.

One row per stored payload digest would grow with the crawl if it were kept in memory
(about 1 KB a page with its strings), and a resumed crawl would have to read every CDXJ
file again to rebuild it.  So the table lives in ``ARCHIVE/warc-dedup.sqlite`` (WAL),
beside the frontier's state rather than among the WARC files that other tools read.

The writer process alone adds rows, in batches (`add` keeps up to `BATCH` pending rows
in memory, visible to look-ups at once), and looks digests up through a read-only
connection, after a Bloom filter in fixed memory (`DigestFilter`) that knows most new
payloads are new without a query.  A row is added only after its record was
written, so the table never names a payload the archive lacks -- except after a crash
or a power loss, which is why each row names its WARC file: at start-up the rows of a
file that was still open (or is gone) are dropped and the file's closed CDXJ read
instead, and closed files the table does not know (an older archive, a merge) are read
once.  A missing row only costs a full copy instead of a revisit; a wrong row would
make a revisit without an original, so the table errs on the side of missing rows.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..archive_reader.capture import Capture
from ..archive_reader.cdxj import cdxj_path_for, index_warc, read_cdxj
from .records import Original

log = logging.getLogger(__name__)

BATCH = 512
"""Rows kept pending (in memory, already visible to look-ups) before one commit."""
RECENT = 1024
"""Digests found in the table kept in memory: bodies repeated often (error pages) skip SQLite."""
FILTER_BITS = 1 << 23
"""Bits of the in-memory filter (1 MiB) that answers most look-ups of new payloads."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    complete INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS originals (
    digest TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    date TEXT NOT NULL,
    record_id TEXT,
    file INTEGER NOT NULL
) WITHOUT ROWID;
"""


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    connection.execute("PRAGMA busy_timeout = 10000")
    if not readonly:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
    return connection


class DedupTable:
    """Payload digest -> `Original`, on disk; `get` from any thread, the rest from one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = _connect(path)
        self._db.executescript(_SCHEMA)
        self._pending: dict[str, Original] = {}
        self._pending_file: dict[str, str] = {}
        self._recent: dict[str, Original] = {}
        self._file_ids: dict[str, int] = {}
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._filter = DigestFilter()
        for (digest,) in self._db.execute("SELECT digest FROM originals"):
            self._filter.add(digest)

    # -- any thread --------------------------------------------------------------------

    def get(self, digest: str, /) -> Original | None:
        """The first stored copy of `digest`, or None."""
        found = self._pending.get(digest) or self._recent.get(digest)
        if found is not None:
            return found
        if digest not in self._filter:
            return None
        row = (
            self._reader()
            .execute("SELECT url, date, record_id FROM originals WHERE digest = ?", (digest,))
            .fetchone()
        )
        if row is None:
            return None
        found = Original(row[0], row[1], row[2])
        if len(self._recent) >= RECENT:
            self._recent = {}
        self._recent[digest] = found
        return found

    def _reader(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "db", None)
        if connection is None:
            connection = _connect(self.path, readonly=True)
            self._local.db = connection
            with self._readers_lock:
                self._readers.append(connection)
        return connection

    # -- the writer thread -------------------------------------------------------------

    def add(self, digest: str, original: Original, filename: str) -> None:
        """Note that `digest` was just written to `filename` (a WARC name without ``.open``)."""
        if digest in self._pending:
            return
        self._filter.add(digest)
        self._pending_file[digest] = filename
        self._pending[digest] = original
        if len(self._pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        pending, files = self._pending, self._pending_file
        rows = [
            (digest, o.url, o.date, o.record_id, self._file_id(files[digest]))
            for digest, o in pending.items()
        ]
        with self._transaction():
            self._db.executemany("INSERT OR IGNORE INTO originals VALUES (?, ?, ?, ?, ?)", rows)
        # after the commit: a look-up that misses the new dict finds the rows on disk
        self._pending, self._pending_file = {}, {}

    def file_closed(self, filename: str) -> None:
        """`filename` was closed whole: its rows stand, it need not be read at start-up."""
        self.flush()
        file_id = self._file_id(filename)
        self._db.execute("UPDATE files SET complete = 1 WHERE id = ?", (file_id,))

    def close(self) -> None:
        self.flush()
        with self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
        self._db.close()

    def _file_id(self, filename: str) -> int:
        known = self._file_ids.get(filename)
        if known is not None:
            return known
        self._db.execute("INSERT OR IGNORE INTO files (name) VALUES (?)", (filename,))
        row = self._db.execute("SELECT id FROM files WHERE name = ?", (filename,)).fetchone()
        self._file_ids[filename] = int(row[0])
        return int(row[0])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            self._file_ids.clear()  # ids handed out inside the transaction are gone
            raise
        self._db.execute("COMMIT")

    # -- start-up ----------------------------------------------------------------------

    def sync(self, folder: Path) -> int:
        """Make the table agree with the closed WARC files of `folder`; return files read.

        Rows of files not closed whole (a crashed run's) or no longer there are dropped;
        closed files the table does not know are read from their CDXJ (or scanned).
        """
        closed = {p.name: p for p in folder.iterdir() if p.name.endswith((".warc.gz", ".warc"))}
        rows = self._db.execute("SELECT id, name, complete FROM files").fetchall()
        stale = [(file_id,) for file_id, name, complete in rows if not complete or name not in closed]
        if stale:
            with self._transaction():
                self._db.executemany("DELETE FROM originals WHERE file = ?", stale)
                self._db.executemany("DELETE FROM files WHERE id = ?", stale)
        known = {name for _id, name, complete in rows if complete and name in closed}
        todo = sorted(set(closed) - known)
        for name in todo:
            path = closed[name]
            index = cdxj_path_for(path)
            damaged = _Damaged()
            captures = read_cdxj(index, damaged) if index.is_file() else index_warc(path)
            self._ingest(name, captures)
            damaged.warn()
        return len(todo)

    def _ingest(self, name: str, captures: Iterable[Capture]) -> None:
        def rows(file_id: int) -> Iterator[tuple[str, str, str, int]]:
            for c in captures:
                if c.digest and not c.is_revisit:
                    self._filter.add(c.digest)
                    yield c.digest, c.url, _iso(c.timestamp), file_id

        with self._transaction():
            file_id = self._file_id(name)
            self._db.executemany("INSERT OR IGNORE INTO originals VALUES (?, ?, ?, NULL, ?)", rows(file_id))
            self._db.execute("UPDATE files SET complete = 1 WHERE id = ?", (file_id,))


class DigestFilter:
    """A Bloom filter of the digests in the table, in fixed memory: a payload it has never
    seen (most of a crawl's) is known new without a query.  Each query opens a read
    transaction on the WAL file: 3-4% of the writer process's CPU on the bench site.  A
    false "maybe" only costs the query (about 5% of new payloads at a million rows); a
    larger table just asks SQLite more often.
    """

    def __init__(self, bits: int = FILTER_BITS) -> None:
        if bits & (bits - 1):
            raise ValueError("bits must be a power of two")
        self._bits = bytearray(bits // 8)
        self._mask = bits - 1

    def add(self, digest: str) -> None:
        bits = self._bits
        key = hash(digest)
        for position in (key & self._mask, (key >> 32) & self._mask):
            bits[position >> 3] |= 1 << (position & 7)

    def __contains__(self, digest: object) -> bool:
        bits = self._bits
        key = hash(digest)
        first, second = key & self._mask, (key >> 32) & self._mask
        return bool(bits[first >> 3] & (1 << (first & 7)) and bits[second >> 3] & (1 << (second & 7)))


class _Damaged:
    """Lines of a CDXJ file that could not be read: the first named, the others counted.

    Such a line costs a full copy of its payload later instead of a revisit, never the crawl.
    """

    def __init__(self) -> None:
        self.first: str | None = None
        self.count = 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = message

    def warn(self) -> None:
        if self.first is not None:
            more = f" ({self.count - 1} more such lines)" if self.count > 1 else ""
            log.warning("%s%s", self.first, more)


def _iso(t: str) -> str:
    return f"{t[0:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}Z"
