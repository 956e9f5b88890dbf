"""Bringing the index back in line with the WARC files when a crawl resumes.

A page reaches the spool after its WARC records are written and before its URL is marked
done, so a kill between the two leaves a page that is archived, not indexed, and never
fetched again (resuming marks it done from the WARC).  So on resume the newest indexable
capture of every URL in the WARC files (found through their CDXJ, which costs no payload
reads) is compared with what the index and the spool already hold, and only the missing
ones are read back from the WARC files and spooled (as references to their records).  The
index keeps one document per URL, so a page spooled again replaces its earlier copy instead
of adding a second.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from archiver.api import WARC_FOLDER, ArchiveError, ArchiveLockedError

from ..markup.text import INDEXED_TYPES, is_indexable, sniff_encoding
from .reindex import MAX_CONTENT, media_type
from .spool import Spool
from .store import Capture, RecordRef, WriterLock, open_engine, present_dir, spool_path

log = logging.getLogger("archiver.index")

LOCK_WAIT = 60.0
"""How long to wait for the writer of the killed run, which commits its last batch on exit."""
_BATCH = 64


def newest_indexable(archive: Path) -> dict[str, Any]:
    """URL -> the newest capture in the WARC files that may be an indexable page."""
    from ..archive_reader.reader import open_archive

    folder = archive / WARC_FOLDER
    if not folder.is_dir():
        return {}
    newest: dict[str, Any] = {}
    for capture in open_archive(folder).iter_captures():
        status = capture.status or 0
        if not 200 <= status < 300:
            continue
        if not capture.is_revisit and capture.mime not in INDEXED_TYPES:
            continue  # a revisit's media type is in its record: decided when read
        seen = newest.get(capture.url)
        if seen is None or seen.timestamp <= capture.timestamp:
            newest[capture.url] = capture
    return newest


def _read(warcs: Any, found: Any) -> Capture | None:
    from ..archive_reader.digests import payload_digest

    try:
        response = warcs.read(found)
        media, charset = media_type(response.header("Content-Type"))
        if response.status is None or not is_indexable(response.status, media):
            return None
        content = response.content(MAX_CONTENT)
    except (ArchiveError, OSError) as exc:
        log.warning("index: cannot read %s back from its WARC file: %s", found.url, exc)
        return None
    if not content:
        return None
    encoding = sniff_encoding(content, charset)
    record = None
    if not found.is_revisit and found.digest and payload_digest(response.payload) == found.digest:
        record = RecordRef(found.filename, found.offset, found.length, found.url, found.digest)
    return Capture(found.url, found.timestamp, response.status, media, encoding, content, record=record)


def _missing(archive: Path) -> tuple[Any, list[Any]]:
    """The WARC captures that are neither in the index nor in the spool."""
    from ..archive_reader.reader import open_archive

    wanted = newest_indexable(archive)
    if not wanted:
        return None, []
    have: dict[str, str] = {}
    if present_dir(archive) is not None:
        try:
            index = open_engine(archive)
        except ArchiveError:
            index = None  # none yet, or damaged: the writer sets a damaged one aside
        if index is not None:
            try:
                have = index.indexed_times()
            except (ArchiveError, ValueError, OSError):
                have = {}
            finally:
                index.close()
    spool = Spool(spool_path(archive))
    try:
        for url, stamp in spool.captured():
            if have.get(url, "") < stamp:
                have[url] = stamp
    finally:
        spool.close()
    missing = [c for url, c in wanted.items() if have.get(url, "") < c.timestamp]
    return open_archive(archive / WARC_FOLDER), missing


def _spooled(archive: Path, warcs: Any, missing: list[Any]) -> Iterator[int]:
    spool = Spool(spool_path(archive))
    try:
        batch: list[Capture] = []
        for found in missing:
            capture = _read(warcs, found)
            if capture is not None:
                batch.append(capture)
            if len(batch) >= _BATCH:
                spool.add(batch)
                yield len(batch)
                batch = []
        if batch:
            spool.add(batch)
            yield len(batch)
    finally:
        spool.close()


def bring_in_line(archive: Path, lock_wait: float = LOCK_WAIT) -> int:
    """Spool every indexable page of the WARC files that the index and the spool miss.

    Returns how many pages were spooled.  Blocking: call it from a thread.  Holds the
    index's writer lock meanwhile, so that no writer moves pages from the spool to the
    index while the two are compared.
    """
    lock = WriterLock(archive)
    deadline = time.monotonic() + lock_wait
    while True:
        try:
            lock.acquire()
            break
        except ArchiveLockedError:
            if time.monotonic() >= deadline:
                log.warning(
                    "index: could not check the index against the WARC files (its writer is busy);"
                    " run `archiver reindex %s` if pages are missing from search",
                    archive,
                )
                return 0
            time.sleep(0.2)
    try:
        warcs, missing = _missing(archive)
        if not missing:
            return 0
        spooled = sum(_spooled(archive, warcs, missing))
    finally:
        lock.release()
    if spooled:
        log.warning("resuming: %d archived pages were missing from the search index; indexing them", spooled)
    return spooled
