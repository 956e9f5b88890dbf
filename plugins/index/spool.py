"""Pages waiting to be indexed, kept on disk in ``ARCHIVE/index/spool.sqlite``.

The crawl appends every indexable page here (from a thread, never the event loop) and the
writer process reads them in order, deleting rows only after the index committed them.
So the crawl never waits for whoosh, a slow writer only makes the spool longer, and a
killed writer (or a Ctrl-C) loses nothing: the next writer starts from the first row left.

A page the WARC files hold is spooled as a reference to its response record (file, offset,
length, URI and payload digest: about 250 bytes a page), read back when the page is indexed;
a backlog then costs the disk almost nothing beside the WARC files that hold the same bytes.
A page no WARC record holds (no WARC written, a revisit, a rendered DOM) is kept as a copy,
zlib-compressed (a fifth of its HTML).  A reference whose record cannot be read back, or
reads as another URI, second or payload, is skipped with a warning, never indexed in its
place.  Once the writer has caught up the file gives its free pages back (SQLite's
incremental vacuum, a full VACUUM for a spool made before), so an empty spool is at most a
megabyte rather than the size of its largest backlog.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver.api import WARC_FOLDER, ArchiverError, in_chunks

from .store import Capture, RecordRef

if TYPE_CHECKING:
    from ..archive_reader.reader import WarcArchive

log = logging.getLogger("archiver.index")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    time TEXT NOT NULL,
    status INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    encoding TEXT,
    content BLOB NOT NULL,
    packed INTEGER NOT NULL DEFAULT 0,
    record_file TEXT,
    record_offset INTEGER,
    record_length INTEGER,
    record_target TEXT,
    record_digest TEXT
)
"""
PLAIN, PACKED, REFERENCE = 0, 1, 2
"""`packed`: the page as it came, zlib-compressed, or in the WARC record the row names."""
_RECORD_COLUMNS = (
    "record_file TEXT",
    "record_offset INTEGER",
    "record_length INTEGER",
    "record_target TEXT",
    "record_digest TEXT",
)
LEVEL = 1
"""zlib's level for spooled pages: HTML shrinks about 5x at level 1, for little CPU in the
spool's thread (never the crawl's event loop)."""
WAL_PAGES = 64
"""Pages (of 4 KiB) the write-ahead log holds before it is checkpointed and cut back."""
SHRINK_PAGES = 256
"""Free pages (of 4 KiB) the file holds before a caught-up writer gives them back."""


class Spool:
    """One connection to the spool: each process opens its own, used by one thread at a time."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect in a new file only
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # each group commit adds a few 4 KiB pages to the log: checkpoint it often and cut it
        # back, or it grows to megabytes for a backlog of references of a few hundred kilobytes
        self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        self._db.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
        self._db.execute(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(pending)")}
        if "packed" not in columns:  # a spool of an earlier version: its rows are plain
            with self._db:
                self._db.execute("ALTER TABLE pending ADD COLUMN packed INTEGER NOT NULL DEFAULT 0")
        for column in _RECORD_COLUMNS:  # ... or copies
            if column.split()[0] not in columns:
                with self._db:
                    self._db.execute(f"ALTER TABLE pending ADD COLUMN {column}")
        self._warcs: WarcArchive | None = None

    def add(self, captures: Iterable[Capture]) -> int:
        """Append pages in one transaction (a reference for a page whose `record` is known,
        else a compressed copy); returns the id of the last row."""
        with self._db:
            self._db.execute("BEGIN")
            cursor = self._db.executemany(
                f"INSERT INTO pending ({_CAPTURE}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_row(c) for c in captures],
            )
            del cursor
            row = self._db.execute("SELECT max(id) FROM pending").fetchone()
        return int(row[0] or 0)

    def read(self, after: int, limit: int) -> list[tuple[int, Capture | None]]:
        """The next rows, in order; None for a row whose WARC record cannot be read back."""
        rows = self._db.execute(
            f"SELECT id, {_CAPTURE} FROM pending WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit),
        ).fetchall()
        return [(row[0], self._capture(row[1:])) for row in rows]

    def last_id(self) -> int | None:
        """The id of the newest row, None when no row waits."""
        (found,) = self._db.execute("SELECT max(id) FROM pending").fetchone()
        return None if found is None else int(found)

    def ids_between(self, after: int, last: int, limit: int) -> list[int]:
        """Ids of the rows after `after` up to `last`, the first `limit` of them."""
        return [
            int(row_id)
            for (row_id,) in self._db.execute(
                "SELECT id FROM pending WHERE id > ? AND id <= ? ORDER BY id LIMIT ?", (after, last, limit)
            )
        ]

    def urls_of(self, row_ids: Sequence[int]) -> list[tuple[int, str]]:
        """(row id, url) of the given rows still spooled."""
        found: list[tuple[int, str]] = []
        for chunk, marks in in_chunks(row_ids):
            rows = self._db.execute(f"SELECT id, url FROM pending WHERE id IN ({marks})", chunk)
            found += ((int(row_id), str(url)) for row_id, url in rows)
        return found

    def repeated(self, after: int, last: int) -> dict[str, list[int]]:
        """The URLs spooled more than once after `after` up to `last`, each with its row ids
        in order: a few in a crawl, so they are found by SQLite's sort, on disk past its
        cache, instead of a dictionary of every waiting URL."""
        found: dict[str, list[int]] = {}
        for url, ids in self._db.execute(
            "SELECT url, group_concat(id) FROM pending WHERE id > ? AND id <= ?"
            " GROUP BY url HAVING count(*) > 1",
            (after, last),
        ):
            found[str(url)] = sorted(int(row_id) for row_id in str(ids).split(","))
        return found

    def rows(self, row_ids: list[int]) -> Iterator[Capture]:
        """The captures of the given rows, in order, read a few at a time (those whose WARC
        record cannot be read back left out)."""
        for _row_id, capture in self.rows_with_ids(row_ids):
            yield capture

    def rows_with_ids(self, row_ids: list[int]) -> Iterator[tuple[int, Capture]]:
        """(row id, capture) of the given rows still spooled, in order, a few at a time
        (those whose WARC record cannot be read back left out)."""
        for chunk, marks in in_chunks(row_ids, 32):
            for row in self._db.execute(
                f"SELECT id, {_CAPTURE} FROM pending WHERE id IN ({marks}) ORDER BY id",
                chunk,
            ).fetchall():
                capture = self._capture(row[1:])
                if capture is not None:
                    yield int(row[0]), capture

    def delete_ids(self, row_ids: list[int]) -> None:
        """Delete the given rows, in one transaction."""
        with self._db:
            self._db.execute("BEGIN")
            for chunk, marks in in_chunks(row_ids):
                self._db.execute(f"DELETE FROM pending WHERE id IN ({marks})", chunk)

    def first_after(self, after: int) -> int | None:
        """The id of the first row after `after`, None when there is none."""
        (found,) = self._db.execute("SELECT min(id) FROM pending WHERE id > ?", (after,)).fetchone()
        return None if found is None else int(found)

    def delete_upto(self, last_id: int) -> None:
        self._db.execute("DELETE FROM pending WHERE id <= ?", (last_id,))

    def captured(self) -> list[tuple[str, str]]:
        """(url, capture time) of every waiting page, without reading their content."""
        return [(str(u), str(t)) for u, t in self._db.execute("SELECT url, time FROM pending")]

    def pending(self) -> int:
        """Rows not yet committed to the index: cheap (two index look-ups), not a count.  One
        query with both min() and max() would scan the table: SQLite reads a bare min() or
        max() from the index only when it is the query's only aggregate."""
        low, high = self._db.execute(
            "SELECT (SELECT min(id) FROM pending), (SELECT max(id) FROM pending)"
        ).fetchone()
        return 0 if low is None else int(high) - int(low) + 1

    def shrink(self) -> bool:
        """Give the file's free pages back once no row waits (the writer caught up): returns
        whether it did.  A spool made before incremental vacuum is rebuilt by VACUUM once."""
        if self._db.execute("SELECT 1 FROM pending LIMIT 1").fetchone() is not None:
            return False
        (free,) = self._db.execute("PRAGMA freelist_count").fetchone()
        (mode,) = self._db.execute("PRAGMA auto_vacuum").fetchone()
        if free < SHRINK_PAGES and mode == 2:
            return False
        if mode == 2:
            self._db.executescript("PRAGMA incremental_vacuum;")  # execute() frees one page
        else:
            self._db.execute("VACUUM")  # applies auto_vacuum=INCREMENTAL, set when opened
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

    def close(self) -> None:
        self._db.close()

    def _capture(self, row: tuple[Any, ...]) -> Capture | None:
        url, time, status, content_type, encoding, content, packed, *where = row
        if packed == REFERENCE:
            record = RecordRef(*where)
            content = self._read_back(url, time, record)
            if content is None:
                return None
            return Capture(url, time, status, content_type, encoding, content, record=record)
        plain = zlib.decompress(content) if packed else content
        return Capture(url, time, status, content_type, encoding, plain)

    def _read_back(self, url: str, time: str, record: RecordRef) -> bytes | None:
        """The page's content from its WARC record, decoded as the crawl decoded it; None
        (and a warning) when the record is gone or is not the page's."""
        from ..archive_reader.capture import Capture as Line
        from ..archive_reader.digests import payload_digest
        from ..archive_reader.reader import open_archive

        try:
            if self._warcs is None:
                self._warcs = open_archive(self.path.parent.parent / WARC_FOLDER)
            line = Line(
                url=record.target,
                timestamp=time,
                status=None,
                mime=None,
                digest=record.digest,
                length=record.length,
                offset=record.offset,
                filename=record.filename,
            )
            response = self._warcs.read(line)
            stamp = "".join(_DIGITS.findall(response.date))[:14]
            at = f"the record at {record.filename}:{record.offset}"
            if response.url != record.target or stamp != time:
                raise ArchiverError(f"{at} is {response.url} of {stamp}")
            if payload_digest(response.payload) != record.digest:
                raise ArchiverError(f"{at} holds another payload")
            return response.content(response.limits.max_decoded_size)  # the crawl's own cap
        except (OSError, ArchiverError, ValueError) as exc:
            log.warning("index: skipped %s: its WARC record cannot be read back (%s)", url, exc)
            return None


_CAPTURE = (
    "url, time, status, content_type, encoding, content, packed,"
    " record_file, record_offset, record_length, record_target, record_digest"
)
_DIGITS = re.compile(r"\d+")


def _row(capture: Capture) -> tuple[Any, ...]:
    head = (capture.url, capture.time, capture.status, capture.content_type, capture.encoding)
    record = capture.record
    if record is None:
        return (*head, zlib.compress(capture.content, LEVEL), PACKED, None, None, None, None, None)
    where = (record.filename, record.offset, record.length, record.target, record.digest)
    return (*head, b"", REFERENCE, *where)


def pending_in(path: Path) -> int:
    """Pages waiting in the spool at `path`, 0 when there is none (for `status`, `search`)."""
    if not path.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            low, high = db.execute("SELECT min(id), max(id) FROM pending").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return 0 if low is None else int(high) - int(low) + 1
