"""Rebuild an index from WARC files alone: our own archive's, or any tool's.

The WARC files are the archive's truth and the index is derived data: `reindex` reads
``response`` records (and ``revisit`` records, whose payload is an earlier response's)
with warcio, keeps successful HTML and text pages, and builds a new index beside the
old one, swapped in only when complete, so a search keeps working meanwhile and an
interrupted rebuild leaves the old index as it was.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

from warcio.bufferedreaders import ChunkedDataReader

from archiver.decode import decode_content
from archiver.errors import ArchiveError, UsageError, check_writable

from ..warc.members import ReadLimits, RecordError, iter_members, parse_record, read_member
from .extract import INDEXED_TYPES, is_indexable, sniff_encoding
from .spool import Spool
from .store import (
    DEFAULT_MAX_CHARS,
    MARKER,
    Capture,
    WriterLock,
    create_index,
    index_root,
    spool_path,
    whoosh_dir,
)
from .writer import Batcher, Control, run

log = logging.getLogger("archiver.index")

MAX_CONTENT = 64 * 1024 * 1024
WARC_PATTERNS = ("*.warc.gz", "*.warc.gz.open", "*.warc", "*.warc.open")


@dataclass
class ReindexStats:
    files: int = 0
    records: int = 0
    indexed: int = 0
    skipped_files: int = 0
    skipped_records: int = 0
    seconds: float = 0.0


def archive_warcs(archive: Path) -> list[Path]:
    """The archive's WARC files, in name order (rotation order), finished or in progress."""
    folder = archive / "warc"
    found = {p for pattern in WARC_PATTERNS for p in folder.glob(pattern)}
    return sorted(found)


def warc_time(date: str) -> str:
    """'2024-05-01T12:00:03.123456Z' -> '20240501120003' (truncated, like CDXJ)."""
    digits = "".join(ch for ch in date[:19] if ch.isdigit())
    return digits.ljust(14, "0")[:14]


def media_type(raw: str | None) -> tuple[str, str | None]:
    if not raw:
        return "", None
    message = Message()
    message["Content-Type"] = raw
    charset = message.get_param("charset")
    return message.get_content_type().lower(), str(charset) if isinstance(charset, str) else None


def _read_payload(record: Any, limits: ReadLimits) -> bytes:
    """The body with its transfer and content codings undone, within the crawl's caps."""
    http = record.http_headers
    stream = record.raw_stream
    if (http.get_header("Transfer-Encoding") or "").lower() == "chunked":
        stream = ChunkedDataReader(stream)
    decoded = decode_content(
        stream.read(),
        http.get_header("Content-Encoding"),
        min(MAX_CONTENT, limits.max_decoded_size),
        limits.max_decompression_ratio,
    )
    if decoded.error:
        raise ArchiveError(decoded.error)
    return decoded.content


def _payload_at(path: Path, offset: int, limits: ReadLimits) -> bytes | None:
    with path.open("rb") as handle:
        member = read_member(handle, offset, limits)
    if member.problem:
        return None
    return _read_payload(parse_record(member, path), limits)


def iter_captures(paths: Sequence[Path], stats: ReindexStats) -> Iterator[Capture]:
    """Indexable pages from `paths`, in file order.

    Records are read within the caps of the crawl that wrote them; a record that cannot
    be read is reported (file, offset, why) and skipped, a file that cannot be read on
    is reported and the next one read.
    """
    originals: dict[str, tuple[Path, int]] = {}
    for path in paths:
        stats.files += 1
        limits = ReadLimits.for_archive(path.parent)
        try:
            with path.open("rb") as handle:
                for member in iter_members(handle, limits):
                    if member.problem:
                        log.warning("reindex: %s: offset %d: %s", path, member.offset, member.problem)
                        if member.fatal:
                            stats.skipped_files += 1
                        else:
                            stats.skipped_records += 1
                        continue
                    stats.records += 1
                    try:
                        record = parse_record(member, path)
                        capture = _capture(record, member.offset, path, originals, limits)
                    except RecordError as exc:
                        log.warning("reindex: %s", exc)
                        stats.skipped_records += 1
                        continue
                    if capture is not None:
                        yield capture
        except OSError as exc:
            stats.skipped_files += 1
            log.warning("reindex: stopped reading %s: %s", path, exc.strerror or exc)


def _capture(
    record: Any, offset: int, path: Path, originals: dict[str, tuple[Path, int]], limits: ReadLimits
) -> Capture | None:
    if record.rec_type not in ("response", "revisit") or record.http_headers is None:
        return None
    try:
        status = int(record.http_headers.get_statuscode())
    except (TypeError, ValueError):
        return None
    media, charset = media_type(record.http_headers.get_header("Content-Type"))
    if media not in INDEXED_TYPES:
        return None
    url = record.rec_headers.get_header("WARC-Target-URI") or ""
    when = warc_time(record.rec_headers.get_header("WARC-Date") or "")
    digest = record.rec_headers.get_header("WARC-Payload-Digest")
    if record.rec_type == "response":
        if not is_indexable(status, media):
            return None
        try:
            content = _read_payload(record, limits)
        except Exception as exc:  # a corrupt or too large body: skip this record
            log.warning("reindex: %s: offset %d: skipped %s: %s", path, offset, url, exc)
            return None
        if digest:
            originals[digest] = (path, offset)
    else:
        if not is_indexable(status, media) or digest not in originals:
            return None
        found = _payload_at(*originals[digest], limits)
        if found is None:
            return None
        content = found
    if not url or not content:
        return None
    return Capture(url, when, status, media, sniff_encoding(content, charset), content)


def reindex(
    archive: Path,
    warcs: Sequence[Path] | None = None,
    batch_size: int = 2000,
    max_chars: int = DEFAULT_MAX_CHARS,
    progress: Callable[[ReindexStats], None] | None = None,
    processes: int = 1,
) -> ReindexStats:
    """Build `archive`'s index from `warcs` (default: the archive's own WARC files), with
    `processes` worker processes when more than one."""
    own = warcs is None
    paths = archive_warcs(archive) if warcs is None else list(warcs)
    if not paths:
        raise ArchiveError(f"no WARC files in {archive / 'warc'}: nothing to index")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"not a WARC file: {path}")
    check_writable(archive, "build its index")
    stats = ReindexStats()
    started = time.monotonic()
    with WriterLock(archive):
        target = whoosh_dir(archive)
        building = target.with_name(target.name + ".new")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        ix = create_index(building)
        batcher = Batcher(ix, batch_size, batch_seconds=1e9, max_chars=max_chars)
        newest: dict[str, str] = {}
        shown = time.monotonic()
        try:
            if processes > 1:
                batcher.indexed = _build_in_parallel(
                    archive,
                    ix,
                    iter_captures(paths, stats),
                    stats,
                    batch_size,
                    max_chars,
                    processes,
                    progress,
                )
            for capture in iter_captures(paths, stats) if processes == 1 else ():
                seen = newest.get(capture.url)
                if seen is not None and seen > capture.time:
                    continue
                newest[capture.url] = capture.time
                batcher.add(capture, replace=seen is not None)
                if batcher.due():
                    batcher.commit()
                if progress is not None and time.monotonic() - shown >= 2.0:
                    shown = time.monotonic()
                    stats.indexed = batcher.indexed + batcher.uncommitted
                    stats.seconds = shown - started
                    progress(stats)
            batcher.commit()
        except BaseException:
            batcher.cancel()
            ix.close()
            shutil.rmtree(building, ignore_errors=True)
            raise
        ix.close()
        _swap(building, target)
        with contextlib.suppress(FileNotFoundError):
            (index_root(archive) / MARKER).unlink()
        if own:
            _clear_spool(archive)
    stats.indexed = batcher.indexed
    stats.seconds = time.monotonic() - started
    return stats


def _build_in_parallel(
    archive: Path,
    ix: Any,
    captures: Iterator[Capture],
    stats: ReindexStats,
    batch_size: int,
    max_chars: int,
    processes: int,
    progress: Callable[[ReindexStats], None] | None,
) -> int:
    """Pages read from the WARC files by a thread go through a spool of their own to
    `processes` workers (see `parallel`); returns how many were indexed."""
    import threading

    from .parallel import Workers, index_round

    path = index_root(archive) / "reindex.sqlite"
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)
    round_size = batch_size * processes
    read: list[BaseException] = []
    done = threading.Event()
    cancelled = threading.Event()

    def produce() -> None:
        spool = Spool(path)
        newest: dict[str, str] = {}
        batch: list[Capture] = []
        try:
            for capture in captures:
                seen = newest.get(capture.url)
                if seen is not None and seen > capture.time:
                    continue  # an older capture found after a newer one
                newest[capture.url] = capture.time
                batch.append(capture)
                if len(batch) >= 64:
                    spool.add(batch)
                    batch = []
                    while spool.pending() > 2 * round_size and not cancelled.is_set():
                        cancelled.wait(0.05)  # bounded: the workers are behind
                    if cancelled.is_set():
                        return
            if batch:
                spool.add(batch)
        except BaseException as exc:
            read.append(exc)
        finally:
            spool.close()
            done.set()

    reader = threading.Thread(target=produce, name="reindex-read", daemon=True)
    spool = Spool(path)
    workers = Workers(whoosh_dir_of(ix), path, processes, max_chars)
    indexed, after = 0, 0
    started = time.monotonic()
    reader.start()
    try:
        while True:
            finished = done.is_set()
            if read:
                break
            if not finished and spool.pending() < round_size:
                done.wait(0.05)  # a whole round for the workers, while the thread reads on
                continue
            count, last = index_round(ix, spool, workers, round_size, after)
            if last == after and finished:
                break
            indexed, after = indexed + count, last
            if progress is not None:
                stats.indexed, stats.seconds = indexed, time.monotonic() - started
                progress(stats)
        if read:
            raise read[0]
    finally:
        cancelled.set()
        reader.join()
        workers.close()
        spool.close()
        for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            leftover.unlink(missing_ok=True)
    return indexed


def whoosh_dir_of(ix: Any) -> Path:
    return Path(ix.storage.folder)


def _swap(building: Path, target: Path) -> None:
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    building.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(target.with_name(target.name + ".damaged"), ignore_errors=True)


def _clear_spool(archive: Path) -> None:
    """Pages spooled by an interrupted crawl are in its WARC files too: now indexed."""
    path = spool_path(archive)
    if path.exists():
        spool = Spool(path)
        try:
            spool.delete_upto(2**62)
        finally:
            spool.close()


def catch_up(
    archive: Path, batch_size: int = 2000, max_chars: int = DEFAULT_MAX_CHARS, processes: int = 1
) -> int:
    """Index the pages an interrupted crawl left in the spool; returns how many were waiting."""
    path = spool_path(archive)
    if not path.exists():
        return 0
    check_writable(path.parent, "index the waiting pages")
    spool = Spool(path)
    waiting = spool.pending()
    spool.close()
    if waiting:
        run(archive, batch_size, 1e9, max_chars, control=Control("drain"), lock_wait=0, processes=processes)
    return waiting
