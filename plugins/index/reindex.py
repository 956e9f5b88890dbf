"""Rebuild an index from WARC files alone: our own archive's, or any tool's.

The WARC files are the archive's truth and the index is derived data: `reindex` reads
``response`` records (and ``revisit`` records, whose payload is an earlier response's)
with warcio, keeps successful HTML and text pages, and builds a new index beside the
old one, swapped in only when complete, so a search keeps working meanwhile and an
interrupted rebuild leaves the old index as it was.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import shutil
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from archiver.api import WARC_FOLDER, ArchiveError, UsageError, check_writable, decode_content

from ..archive_reader.digests import digest_key
from ..archive_reader.members import (
    DEFAULT_LIMITS,
    GzipProblem,
    GzipStop,
    Member,
    ReadLimits,
    RecordError,
    gzip_members,
    is_gzip,
    is_record_start,
    iter_members,
    parse_record,
    read_member,
)
from ..archive_reader.payload import as_served
from ..archive_reader.suffixes import READ_NAMES
from ..markup.text import INDEXED_TYPES, is_indexable, sniff_encoding
from .spool import Spool
from .store import (
    DEFAULT_MAX_CHARS,
    ENGINE_FOLDERS,
    LEGACY_FOLDER,
    MARKER,
    Capture,
    WriterLock,
    create_engine,
    engine_dir,
    index_root,
    spool_path,
)
from .writer import Batcher, Control, run

log = logging.getLogger("archiver.index")

MAX_CONTENT = 64 * 1024 * 1024
WARC_PATTERNS = tuple(f"*{suffix}" for suffix in READ_NAMES)


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
    folder = archive / WARC_FOLDER
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
    """The body with its transfer and content codings undone, within the crawl's caps
    (a Content-Encoding the stored body is plainly not in is not undone)."""
    http = record.http_headers
    body: bytes = record.raw_stream.read()
    if http is None:
        return body  # a resource record: its block is the payload
    headers, body = as_served([(str(k), str(v)) for k, v in http.headers], body)
    decoded = decode_content(
        body,
        next((v for k, v in headers if k.lower() == "content-encoding"), None),
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
                for offset, member in readable_members(handle, path, limits, stats):
                    try:
                        record = parse_record(member, path)
                        capture = _capture(record, offset, path, originals, limits)
                    except RecordError as exc:
                        log.warning("reindex: %s", exc)
                        stats.skipped_records += 1
                        continue
                    if capture is not None:
                        yield capture
        except OSError as exc:
            stats.skipped_files += 1
            log.warning("reindex: stopped reading %s: %s", path, exc.strerror or exc)


class _RecordCounts(Protocol):
    records: int
    skipped_records: int
    skipped_files: int


def readable_members(
    handle: BinaryIO,
    path: Path,
    limits: ReadLimits,
    counts: _RecordCounts,
    start: int = 0,
    end: int = 2**62,
) -> Iterator[tuple[int, Member]]:
    """(offset, member) of each record of `handle` read from `start` and beginning before
    `end`; a record that cannot be read is reported (file, offset, why) and counted skipped,
    and one that ends the file (`fatal`) counts the file skipped."""
    for member in iter_members(handle, limits):
        offset = start + member.offset
        if offset >= end:
            return
        if member.problem:
            log.warning("reindex: %s: offset %d: %s", path, offset, member.problem)
            if member.fatal:
                counts.skipped_files += 1
            else:
                counts.skipped_records += 1
            continue
        counts.records += 1
        yield offset, member


def _capture(
    record: Any, offset: int, path: Path, originals: dict[str, tuple[Path, int]], limits: ReadLimits
) -> Capture | None:
    url = record.rec_headers.get_header("WARC-Target-URI") or ""
    if record.rec_type == "resource" and url.startswith(("http://", "https://")):
        status, content_type = 200, record.rec_headers.get_header("Content-Type")  # a page as a file
    elif record.rec_type not in ("response", "revisit") or record.http_headers is None:
        return None
    else:
        try:
            status = int(record.http_headers.get_statuscode())
        except (TypeError, ValueError):
            return None
        content_type = record.http_headers.get_header("Content-Type")
    media, charset = media_type(content_type)
    if media not in INDEXED_TYPES:
        return None
    when = warc_time(record.rec_headers.get_header("WARC-Date") or "")
    digest = digest_key(record.rec_headers.get_header("WARC-Payload-Digest"))
    if record.rec_type != "revisit":
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
    title = page_titles(path).get(url, "")
    return Capture(url, when, status, media, sniff_encoding(content, charset), content, title)


PAGES_SUFFIX = ".pages.jsonl"
MAX_PAGE_TITLES = 1_000_000
MAX_PAGE_LINE = 64 * 1024
"""A pages.jsonl line longer than this is skipped unread (one URL and title fit in it)."""
MAX_PAGES_READ = 64 * 1024 * 1024
"""Bytes of one pages.jsonl read at most (as much as `reindex --warc` keeps of one)."""


@functools.lru_cache(maxsize=8)
def page_titles(path: Path) -> dict[str, str]:
    """URL -> title from the pages.jsonl of the WACZ file `path` was unpacked from (`reindex
    --warc X.wacz` keeps it as X.pages.jsonl beside the X-NAME.warc.gz files); empty for others."""
    try:
        pages = [
            p
            for p in path.parent.glob("*" + PAGES_SUFFIX)
            if path.name.startswith(p.name[: -len(PAGES_SUFFIX)] + "-")
        ]
    except OSError:
        return {}
    titles: dict[str, str] = {}
    for listed in pages:
        with contextlib.suppress(OSError), listed.open("rb") as handle:
            read = 0
            while read < MAX_PAGES_READ and (line := handle.readline(MAX_PAGE_LINE + 1)):
                read += len(line)
                if len(line) > MAX_PAGE_LINE:
                    while line and not line.endswith(b"\n"):  # a line no page needs: passed over
                        line = handle.readline(MAX_PAGE_LINE)
                        read += len(line)
                    continue
                try:
                    page = json.loads(line)
                except ValueError:
                    continue  # the header line names the format; a torn line is skipped
                if (
                    isinstance(page, dict)
                    and isinstance(page.get("url"), str)
                    and isinstance(page.get("title"), str)
                    # some tools list a page without a <title> under its URL: no title, then
                    and page["title"].strip() != page["url"]
                ):
                    titles[page["url"]] = page["title"][:1000]
                    if len(titles) >= MAX_PAGE_TITLES:
                        return titles
    return titles


def reindex(
    archive: Path,
    warcs: Sequence[Path] | None = None,
    batch_size: int = 2000,
    max_chars: int = DEFAULT_MAX_CHARS,
    progress: Callable[[ReindexStats], None] | None = None,
    processes: int = 1,
    engine: str | None = None,
) -> ReindexStats:
    """Build `archive`'s index from `warcs` (default: the archive's own WARC files), with
    `processes` worker processes when more than one, in `engine` (default: the engine of
    the archive's index, or the default engine)."""
    own = warcs is None
    paths = archive_warcs(archive) if warcs is None else list(warcs)
    if not paths:
        raise ArchiveError(f"no WARC files in {archive / WARC_FOLDER}: nothing to index")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"not a WARC file: {path}")
    check_writable(archive, "build its index")
    stats = ReindexStats()
    started = time.monotonic()
    with WriterLock(archive):
        target = engine_dir(archive, engine)
        building = target.with_name(target.name + ".new")
        shutil.rmtree(building, ignore_errors=True)
        index = create_engine(building)
        batcher = Batcher(index, batch_size, batch_seconds=1e9, max_chars=max_chars)
        newest: dict[str, str] = {}
        shown = time.monotonic()
        try:
            if processes > 1:
                batcher.indexed = _build_in_parallel(batcher, paths, stats, max_chars, processes, progress)
            for capture in iter_captures(paths, stats) if processes == 1 else ():
                seen = newest.get(capture.url)
                if seen is not None and seen > capture.time:
                    continue
                newest[capture.url] = capture.time
                batcher.add(capture)
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
            index.close()
            shutil.rmtree(building, ignore_errors=True)
            raise
        index.close()
        _swap(building, target)
        with contextlib.suppress(FileNotFoundError):
            (index_root(archive) / MARKER).unlink()
        if own:
            _clear_spool(archive)
    stats.indexed = batcher.indexed
    stats.seconds = time.monotonic() - started
    return stats


def _build_in_parallel(
    batcher: Batcher,
    paths: Sequence[Path],
    stats: ReindexStats,
    max_chars: int,
    processes: int,
    progress: Callable[[ReindexStats], None] | None,
) -> int:
    """`processes` workers read, parse and analyse byte ranges of the WARC files (see
    `parallel`); revisits are indexed once every response was seen.  Of a URL captured
    more than once the newest capture is kept (the later one in file order when the
    times are equal), as one process keeps it.  Returns how many pages were indexed."""
    from .parallel import Pass, Workers

    jobs = list(warc_chunks(paths, processes))
    started = last_shown = time.monotonic()
    stats.files += len(paths)
    newest: dict[str, tuple[str, tuple[int, int]]] = {}
    """URL -> (capture time, (file, offset)) of the document indexed for it."""

    def revisits(done: Pass) -> Iterator[tuple[Any, ...]]:
        first: dict[str, tuple[int, int]] = {}
        waiting: list[tuple[tuple[int, int], str]] = []
        for report in done.chunks.values():
            for digest, order in report.digests:
                if digest not in first or order < first[digest]:
                    first[digest] = order
            waiting += report.revisits
        for number, (order, digest) in enumerate(sorted(waiting), start=len(jobs)):
            original = first.get(digest)
            if original is not None and original < order:
                where, source = str(paths[order[0]]), str(paths[original[0]])
                yield ("revisit", number, where, order[1], source, original[1], order[0])

    def received(_: int, documents: list[tuple[Any, dict[str, Any]]]) -> None:
        for (url, when, order), document in documents:
            seen = newest.get(url)
            if seen is not None and (when, order) <= seen:
                continue  # a newer capture of the URL is indexed already
            newest[url] = (when, order)
            batcher.add_document(document)  # replaces the older one, if any
            if batcher.due():
                batcher.commit()

    def shown(done: Pass) -> None:
        nonlocal last_shown
        if progress is not None and time.monotonic() - last_shown >= 2.0:
            last_shown = time.monotonic()
            stats.indexed, stats.seconds = len(newest), last_shown - started
            progress(stats)

    workers = Workers(None, processes, max_chars, read_chunk)
    try:
        done = workers.run(jobs, received, more=revisits, progress=shown)
    finally:
        workers.close()
    batcher.commit()
    for report in done.chunks.values():
        stats.records += report.records
        stats.skipped_records += report.skipped_records
        stats.skipped_files += report.skipped_files
    return len(newest)


CHUNK_BYTES = 1024 * 1024
"""A worker's share of a compressed WARC file at a time (~200 bench pages, ~1 s of work)."""
MIN_CHUNK_BYTES = 64 * 1024
"""Smaller files are cut into fewer chunks than 8 a worker, not into smaller ones."""


def warc_chunks(paths: Sequence[Path], processes: int) -> Iterator[tuple[Any, ...]]:
    """Byte ranges of the WARC files; a gzip file is cut anywhere (a worker starts at the
    first record that begins in its range), an uncompressed one is read whole."""
    number = 0
    for file_number, path in enumerate(paths):
        try:
            size = path.stat().st_size
            with path.open("rb") as handle:
                cut = is_gzip(handle)
        except OSError:
            size, cut = 0, False
        step = min(CHUNK_BYTES, max(MIN_CHUNK_BYTES, size // (8 * processes) + 1))
        starts = list(range(0, size, step)) if cut and size > step else [0]
        for index, start in enumerate(starts):
            end = starts[index + 1] if index + 1 < len(starts) else 2**62
            yield ("warc", number, str(path), start, end, file_number)
            number += 1


@dataclass
class ChunkReport:
    """What a worker found in one range, besides the pages it indexed."""

    records: int = 0
    skipped_records: int = 0
    skipped_files: int = 0
    digests: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    """(payload digest, (file, offset)) of the responses read: the originals of revisits."""
    revisits: list[tuple[tuple[int, int], str]] = field(default_factory=list)
    """((file, offset), payload digest) of the revisits, indexed once every response was seen."""


class Chunk:
    """A worker's job: the pages of one byte range of a WARC file, or of one revisit."""

    def __init__(self, job: tuple[Any, ...]) -> None:
        self.job = job
        self.found = ChunkReport()

    def captures(self) -> Iterator[tuple[tuple[str, str, tuple[int, int]], Capture]]:
        if self.job[0] == "revisit":
            yield from self._revisit(*self.job[2:])
        else:
            yield from self._range(*self.job[2:])

    def report(self) -> ChunkReport:
        return self.found

    def _range(
        self, name: str, start: int, end: int, file_number: int
    ) -> Iterator[tuple[tuple[str, str, tuple[int, int]], Capture]]:
        path = Path(name)
        limits = _limits(path.parent)
        found = self.found
        try:
            with path.open("rb") as handle:
                first = first_record(handle, start, end, limits.max_record_size) if start else 0
                if first is None:
                    return
                handle.seek(first)
                for offset, member in readable_members(handle, path, limits, found, first, end):
                    try:
                        record = parse_record(member, path)
                        if record.rec_type == "revisit" and record.http_headers is not None:
                            digest = digest_key(record.rec_headers.get_header("WARC-Payload-Digest"))
                            if digest:
                                found.revisits.append(((file_number, offset), digest))
                            continue
                        originals: dict[str, tuple[Path, int]] = {}
                        capture = _capture(record, offset, path, originals, limits)
                    except RecordError as exc:
                        log.warning("reindex: %s", exc)
                        found.skipped_records += 1
                        continue
                    found.digests += [(digest, (file_number, offset)) for digest in originals]
                    if capture is not None:
                        yield (capture.url, capture.time, (file_number, offset)), capture
        except OSError as exc:
            found.skipped_files += 1
            log.warning("reindex: stopped reading %s: %s", path, exc.strerror or exc)

    def _revisit(
        self, name: str, offset: int, original: str, original_offset: int, file_number: int
    ) -> Iterator[tuple[tuple[str, str, tuple[int, int]], Capture]]:
        path = Path(name)
        limits = _limits(path.parent)
        try:
            with path.open("rb") as handle:
                member = read_member(handle, offset, limits)
            if member.problem:
                return
            record = parse_record(member, path)
            digest = digest_key(record.rec_headers.get_header("WARC-Payload-Digest")) or ""
            capture = _capture(record, offset, path, {digest: (Path(original), original_offset)}, limits)
        except (OSError, RecordError) as exc:
            log.warning("reindex: %s: offset %d: %s", path, offset, exc)
            return
        if capture is not None:
            yield (capture.url, capture.time, (file_number, offset)), capture


def read_chunk(job: tuple[Any, ...]) -> Chunk:
    return Chunk(job)


@functools.lru_cache(maxsize=64)
def _limits(folder: Path) -> ReadLimits:
    return ReadLimits.for_archive(folder)


_PROBE = 4096
_STORED_RUN = 65535 + 5
"""The most bytes a deflate stream holds verbatim (one stored block and its header)."""


def first_record(
    handle: BinaryIO, start: int, end: int, cap: int = DEFAULT_LIMITS.max_record_size
) -> int | None:
    """The offset of the first gzip member in [start, end) that holds a WARC record: a
    gzip header whose first bytes inflate to ``WARC/`` (compressed data that happens to
    look like a gzip header does not inflate to a record), followed by whole members.

    A WARC file archived as a response body (a ``.warc.gz`` download) does not compress:
    deflate stores its members verbatim, so they are gzip headers inflating to ``WARC/``
    too.  But a stored block holds at most 64 KiB: members that are those of the file
    itself run on past that, or to its end.
    """
    position = start
    while position < end:
        handle.seek(position)
        window = handle.read(64 * 1024 + 2)
        if len(window) < 3:
            return None
        at = window.find(b"\x1f\x8b\x08")
        while at != -1 and position + at < end:
            if _record_at(handle, position + at) and _members_run_on(handle, position + at, cap):
                return position + at
            at = window.find(b"\x1f\x8b\x08", at + 1)
        position += 64 * 1024
    return None


def _record_at(handle: BinaryIO, offset: int) -> bool:
    handle.seek(offset)
    try:
        head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(handle.read(_PROBE), _PROBE)
    except zlib.error:
        return False
    return is_record_start(head)


def _members_run_on(handle: BinaryIO, offset: int, cap: int) -> bool:
    """Whether whole gzip members from `offset` reach past a stored block's size or the end
    of the file.  A cut, NUL bytes or a too big record end them as they end the file's own."""
    handle.seek(offset)
    for member in gzip_members(handle, cap, offset=offset, keep=False):
        if isinstance(member, GzipStop):
            return member.problem not in (GzipProblem.NOT_GZIP, GzipProblem.CORRUPT)
        if member.offset + member.length - offset > _STORED_RUN:
            return True
    return True


def _swap(building: Path, target: Path) -> None:
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    building.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(target.with_name(target.name + ".damaged"), ignore_errors=True)
    # the index of another engine, or of an earlier version, that this one replaces
    for name in (*ENGINE_FOLDERS.values(), LEGACY_FOLDER, LEGACY_FOLDER + ".old-version"):
        if name != target.name:
            shutil.rmtree(target.with_name(name), ignore_errors=True)


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
