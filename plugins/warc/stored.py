"""What ``crawl --update`` asks of the archive: each URL's latest capture, its validators, its body.

An update sends ``If-None-Match`` / ``If-Modified-Since`` for every URL whose latest capture
carries an ``ETag`` or a ``Last-Modified``, and answers a 304 with that capture's stored page.
The CDXJ files say which capture is the latest but not its headers, so once per run (at
`crawl_started`, in a thread) a table is built in ``ARCHIVE/warc-update.sqlite``: one row per
URL with the latest capture's validators, payload digest, where its payload lies, and what a
server-not-modified revisit must refer to.  On disk because an archive may hold millions of
URLs; a look-up is one primary-key read.  The table is rebuilt from the WARC files at each
start, so a resumed update sees what the interrupted run stored, and it is deleted at the end.

A 304 revisit is not a capture of its own here: the capture it stands for stays the latest
(its payload, and its validators, are the ones the server just confirmed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archiver.api import UPDATE_NAME, WARC_FOLDER, Crawl, Page, canonical_key, hookimpl

from ..archive_reader.capture import Capture
from ..archive_reader.cdxj import WARC_SUFFIXES, cdxj_path_for, index_warc, read_cdxj
from ..archive_reader.members import ReadLimits, read_member

log = logging.getLogger(__name__)

_BATCH = 1000
_RECENT = 256
"""Look-ups kept in memory: a URL is asked about while its fetch is in flight, a few hundred at most."""
_HEAD_READ = 16 * 1024
"""Bytes of a record read at a time to find its headers: WARC and HTTP headers are a few KB."""
_HEAD_MAX = 1024 * 1024
"""The most of a record inflated to find its header blocks."""

_SCHEMA = """
CREATE TABLE latest (
    key TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    status INTEGER NOT NULL,
    revisit INTEGER NOT NULL,
    digest TEXT,
    file TEXT NOT NULL,
    offset INTEGER NOT NULL,
    etag TEXT,
    last_modified TEXT,
    ref_uri TEXT,
    ref_date TEXT,
    ref_id TEXT,
    body_file TEXT,
    body_offset INTEGER
) WITHOUT ROWID;
CREATE TABLE payloads (
    digest TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    offset INTEGER NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class Latest:
    """The latest capture of one URL, as an update needs it."""

    url: str
    status: int
    digest: str | None
    etag: str | None
    last_modified: str | None
    ref_uri: str | None
    """The record holding the payload (the capture itself, or the original of a revisit)."""
    ref_date: str | None
    ref_id: str | None
    body_file: str | None
    body_offset: int | None

    @property
    def refers_to(self) -> tuple[str, str, str | None, str | None] | None:
        """(target URI, WARC date, record id, payload digest) for a server-not-modified revisit."""
        if self.ref_uri is None or self.ref_date is None:
            return None
        return (self.ref_uri, self.ref_date, self.ref_id, self.digest)


class StoredCaptures:
    """The table of latest captures; `get` from the event loop, `build` once, from a thread."""

    def __init__(self, folder: Path, path: Path, limits: ReadLimits) -> None:
        self.folder = folder
        self.path = path
        self.limits = limits
        for suffix in ("", "-wal", "-shm", "-journal"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.executescript(_SCHEMA)
        self._recent: dict[str, Latest | None] = {}

    def build(self) -> int:
        """Read the closed WARC files' indexes, then the latest captures' headers; return URLs known."""
        for path in sorted(p for p in self.folder.iterdir() if p.name.endswith(WARC_SUFFIXES)):
            index = cdxj_path_for(path)
            captures = (
                read_cdxj(index, log.debug) if index.is_file() else index_warc(path, limits=self.limits)
            )
            with self._transaction():
                self._add(path.name, captures)
        self._read_headers()
        with self._transaction():  # where each payload lies: a revisit's is its original's
            self._db.execute("UPDATE latest SET body_file = file, body_offset = offset WHERE NOT revisit")
            self._db.execute(
                "UPDATE latest SET (body_file, body_offset) ="
                " (SELECT file, offset FROM payloads WHERE payloads.digest = latest.digest) WHERE revisit"
            )
            self._db.execute("DELETE FROM payloads")
        row = self._db.execute("SELECT count(*) FROM latest").fetchone()
        return int(row[0])

    def _add(self, name: str, captures: Iterable[Capture]) -> None:
        latest = []
        payloads = []
        for capture in captures:
            if capture.status is None or not capture.url.startswith(("http://", "https://")):
                continue
            if not capture.is_revisit and capture.digest:
                payloads.append((capture.digest, name, capture.offset))
            if capture.is_revisit and capture.status == 304:
                continue
            key = canonical_key(capture.url)
            row = (key, capture.url, capture.timestamp, capture.status, capture.is_revisit, capture.digest)
            latest.append((*row, name, capture.offset))
        self._db.executemany("INSERT OR IGNORE INTO payloads VALUES (?, ?, ?)", payloads)
        self._db.executemany(
            "INSERT INTO latest (key, url, timestamp, status, revisit, digest, file, offset)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET url = excluded.url, timestamp = excluded.timestamp,"
            " status = excluded.status, revisit = excluded.revisit, digest = excluded.digest,"
            " file = excluded.file, offset = excluded.offset"
            " WHERE excluded.timestamp >= latest.timestamp",
            latest,
        )

    def _read_headers(self) -> None:
        """Validators and revisit targets of the latest successful captures, file by file."""
        rows = self._db.execute(
            "SELECT key, file, offset FROM latest WHERE status BETWEEN 200 AND 299 ORDER BY file, offset"
        )
        updates: list[tuple[Any, ...]] = []
        handle = None
        current = None
        try:
            for key, name, offset in rows.fetchall():
                if name != current:
                    if handle is not None:
                        handle.close()
                    handle, current = (self.folder / name).open("rb"), name
                found = _headers(handle, offset, self.folder / name)
                if found is not None:
                    updates.append((*found, key))
                if len(updates) >= _BATCH:
                    self._update(updates)
                    updates = []
        finally:
            if handle is not None:
                handle.close()
        self._update(updates)

    def _update(self, updates: list[tuple[Any, ...]]) -> None:
        with self._transaction():
            self._db.executemany(
                "UPDATE latest SET etag = ?, last_modified = ?, ref_uri = ?, ref_date = ?, ref_id = ?"
                " WHERE key = ?",
                updates,
            )

    def get(self, url: str) -> Latest | None:
        """The latest capture of `url`; the few last answers are kept, since each URL is asked
        about several times in a row (its request, its answer, its record)."""
        if url in self._recent:
            return self._recent[url]
        row = self._db.execute(
            "SELECT url, status, digest, etag, last_modified, ref_uri, ref_date, ref_id, body_file,"
            " body_offset FROM latest WHERE key = ?",
            (canonical_key(url),),
        ).fetchone()
        found = Latest(*row) if row is not None else None
        if len(self._recent) >= _RECENT:
            del self._recent[next(iter(self._recent))]
        self._recent[url] = found
        return found

    def read_page(self, found: Latest) -> Page | None:
        """The stored response holding `found`'s payload, as a `Page`; None when unreadable."""
        if found.body_file is None or found.body_offset is None:
            return None
        path = self.folder / found.body_file
        try:
            with path.open("rb") as handle:
                member = read_member(handle, found.body_offset, self.limits)
            if member.problem:
                return None
            from ..archive_reader.members import parse_record

            record = parse_record(member, path)
            http = record.http_headers
            if http is None:
                return None
            body = record.raw_stream.read()
        except (OSError, ValueError) as exc:
            log.warning("%s: stored capture unreadable: %s", found.url, exc)
            return None
        from ..archive_reader.capture import parse_status

        status = parse_status(http.get_statuscode())
        reason = http.statusline.split(" ", 1)[1] if " " in http.statusline else ""
        headers = tuple((str(k), str(v)) for k, v in http.headers)
        return Page(url=found.url, status=status or 0, reason=reason, headers=headers, body=body)

    def close(self) -> None:
        self._db.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _headers(
    handle: Any, offset: int, path: Path
) -> tuple[str | None, str | None, str | None, str | None, str | None] | None:
    """(ETag, Last-Modified, refers-to URI, date, record id) of the record at `offset`.

    Only the start of the record is read and inflated: its WARC and HTTP header blocks, not
    its body, which is most of the cost of reading a record whole.
    """
    try:
        found = _header_blocks(handle, offset, path.name.endswith(".gz"))
    except (OSError, zlib.error) as exc:
        log.debug("%s: offset %d unreadable: %s", path, offset, exc)
        return None
    if found is None:
        return None
    data, warc_end, http_end = found
    rec = _fields(data[:warc_end], "utf-8")  # WARC/1.1 headers are UTF-8, HTTP ones bytes
    http = _fields(data[warc_end + 4 : http_end], "latin-1")
    if rec.get("warc-type") == "revisit":
        refers = (
            rec.get("warc-refers-to-target-uri"),
            rec.get("warc-refers-to-date"),
            rec.get("warc-refers-to"),
        )
    else:
        refers = (rec.get("warc-target-uri"), rec.get("warc-date"), rec.get("warc-record-id"))
    return (http.get("etag"), http.get("last-modified"), *refers)


def _header_blocks(handle: Any, offset: int, gzipped: bool) -> tuple[bytes, int, int] | None:
    """The start of the record at `offset`, read (and inflated) `_HEAD_READ` bytes at a time
    until its WARC and HTTP header blocks have both ended; with where each ends.

    Headers are most often within the first read, but a response with large headers (a long
    Content-Security-Policy, many cookies) needs more: up to `_HEAD_MAX` inflated bytes.
    """
    handle.seek(offset)
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16) if gzipped else None
    data = b""
    warc_end = -1
    while len(data) <= _HEAD_MAX:
        piece = handle.read(_HEAD_READ)
        if inflater is not None:
            piece = inflater.decompress(inflater.unconsumed_tail + piece, _HEAD_MAX + 1 - len(data))
        if not piece:
            return None  # the end of the file or of the member
        searched = max(len(data) - 3, 0)  # CRLF CRLF may straddle two reads
        data += piece
        if warc_end < 0:
            warc_end = data.find(b"\r\n\r\n", searched)
            searched = warc_end + 4
        if warc_end >= 0:
            http_end = data.find(b"\r\n\r\n", max(searched, warc_end + 4))
            if http_end >= 0:
                return data, warc_end, http_end
        if inflater is not None and inflater.eof:
            return None
    return None


def _fields(block: bytes, encoding: str) -> dict[str, str]:
    """Header lines after the first (the WARC version or the status line), first value of each name."""
    fields: dict[str, str] = {}
    for line in block.decode(encoding, "replace").split("\r\n")[1:]:
        name, colon, value = line.partition(":")
        if colon:
            fields.setdefault(name.strip().lower(), value.strip(" \t"))  # bytes kept as they came
    return fields


_UNSENDABLE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


def sendable(value: str | None) -> str | None:
    """A stored validator (its bytes read as latin-1) as the text that sends those same bytes,
    or None when it cannot be sent back: control characters, or bytes that are not UTF-8
    (the HTTP client writes header text as UTF-8).  The URL is then fetched in full."""
    if not value:
        return None
    raw = value.encode("latin-1", "replace")
    if _UNSENDABLE.search(raw):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


class UpdateLookup:
    """The hooks of an update: validators on requests, stored pages for 304s, unchanged payloads.

    Registered by `configure`; does nothing unless the crawl's mode is ``update``.
    """

    def __init__(self) -> None:
        self.table: StoredCaptures | None = None
        self._damaged: set[str] = set()

    @hookimpl(trylast=True)
    async def crawl_started(self, crawl: Crawl) -> None:
        """After the writer cut back any file a killed run left open: build the table."""
        if crawl.mode != "update":
            return
        folder = crawl.archive / WARC_FOLDER
        if not folder.is_dir():
            return
        table = StoredCaptures(folder, crawl.archive / UPDATE_NAME, ReadLimits.for_archive(folder))
        try:
            known = await asyncio.to_thread(table.build)
        except BaseException:
            table.close()
            raise
        self.table = table
        crawl.stats["warc.stored_urls"] = known
        log.info("update: %d URLs stored in the archive", known)

    @hookimpl
    def prepare_request(self, url: str, headers: MutableMapping[str, str], crawl: Crawl) -> None:
        if self.table is None or urlsplit(url).path == "/robots.txt":
            return
        found = self.table.get(url)
        if found is None or not 200 <= found.status < 300:
            return
        etag = sendable(found.etag)
        if etag:
            headers["If-None-Match"] = etag  # weak ETags (W/"...") go as they came
        last_modified = sendable(found.last_modified)
        if last_modified:
            headers["If-Modified-Since"] = last_modified

    @hookimpl
    async def stored_page(self, url: str, crawl: Crawl) -> Page | None:
        if self.table is None:
            return None
        found = self.table.get(url)
        if found is None or not 200 <= found.status < 300:
            return None
        return await asyncio.to_thread(self.table.read_page, found)

    @hookimpl
    async def same_as_stored(self, page: Page, crawl: Crawl) -> bool | None:
        """Same digest as the latest capture, and that capture still reads whole: a revisit
        pointing at a damaged copy would leave the URL unreadable, so the fresh answer is
        then stored in full instead (`damaged`)."""
        table = self.table
        if table is None or page.truncated or not page.body:
            return None
        found = table.get(page.url)
        if found is None or found.status != page.status or found.digest is None:
            return None
        from ..archive_reader.digests import payload_digest

        if found.digest != payload_digest(page.body):
            return False
        stored = await asyncio.to_thread(table.read_page, found)
        if stored is None or payload_digest(stored.body) != found.digest:
            log.warning("%s: the stored copy is damaged; the fresh answer is stored in full", page.url)
            self._damaged.add(page.url)
            return False
        return True

    def damaged(self, url: str) -> bool:
        """Whether `url`'s stored copy was found damaged (its fresh answer must not be a revisit)."""
        if url not in self._damaged:
            return False
        self._damaged.discard(url)
        return True

    def refers_to(self, url: str) -> tuple[str, str, str | None, str | None] | None:
        """What the server-not-modified revisit of `url` points at."""
        found = self.table.get(url) if self.table is not None else None
        return found.refers_to if found is not None else None

    @hookimpl
    def crawl_finished(self, crawl: Crawl) -> None:
        table, self.table = self.table, None
        if table is not None:
            table.close()
