"""Read WARC (and ARC) files record by record within the crawl's caps, whatever the file holds.

warcio decompresses a record as far as it goes: a 4 MB gzip member of zeros became
4 GiB in memory.  Here each gzip member (one record, as WARC files are written) is
inflated in steps and given up on past `ReadLimits.max_record_size`; an uncompressed
record's Content-Length is checked against the same cap before a byte of its block is
read.  A record that cannot be read is reported by file and offset, and reading goes on
at the next record whenever the file says where that is.

ARC files (the Internet Archive's format before WARC: a ``URL IP DATE MIME LENGTH``
line before each record) are read the same way, gzip per record or not, whatever their
name; warcio turns each record into its WARC form as it parses it (`parse_record`).
A gzip file that is one stream over several records cannot be read record by record:
its first member says so (`ONE_STREAM`) instead of standing for the whole file.
"""

from __future__ import annotations

import enum
import io
import os
import re
import tomllib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from archiver.api import CONFIG_NAME, ArchiveError, Config

__all__ = [
    "ONE_STREAM",
    "GzipProblem",
    "GzipStop",
    "Member",
    "ReadLimits",
    "RecordError",
    "arc_header",
    "gzip_members",
    "is_one_stream",
    "is_record_start",
    "iter_members",
    "parse_record",
    "read_member",
    "record_end",
    "split_stream",
]

_CHUNK = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
_HEADER_SLACK = 256 * 1024
"""Room for the WARC and HTTP header blocks around a body of the largest size."""
_ARC_HEADER = re.compile(
    rb"^(?P<url>\S.*?) \S+ (?:\d{12,14}|-) \S* ?(?:\S+ ){0,5}(?P<length>\d{1,18})\r?\n\Z"
)
_ARC_LINE_MAX = 16 * 1024
_CONTENT_LENGTH = re.compile(rb"\ncontent-length[ \t]*:[ \t]*(\d{1,18})[ \t]*\r?\n", re.IGNORECASE)
_STRAY_TAIL = 8
"""Bytes left over after a record whose Content-Length is short that a reader skips."""
"""An ARC record's header line: URL (spaces are seen in it), IP, 14-digit date (``-`` when
unknown, as in ``filedesc:// - - - 76``: warcio reads such a line too), media
type (version 2 adds result code, checksum, location, offset, file name), then the
block's length."""
ONE_STREAM = (
    "one gzip stream holds several records, so none can be found by its offset:"
    " `archiver reindex --warc FILE -o ARCHIVE` recompresses it, one gzip member per record"
)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The crawl's caps, applied to what is read back: no record is bigger than a crawl writes."""

    max_record_size: int
    max_decoded_size: int
    max_decompression_ratio: int

    @classmethod
    def from_config(cls, config: Config) -> ReadLimits:
        return cls(
            max_record_size=config.max_body_size + 2 * config.max_header_size + _HEADER_SLACK,
            max_decoded_size=config.max_decoded_size,
            max_decompression_ratio=config.max_decompression_ratio,
        )

    @classmethod
    def for_archive(cls, folder: Path) -> ReadLimits:
        """The caps of the crawl that wrote `folder` (its saved ``crawl.toml``), else the defaults.

        A crawl run with bigger caps wrote bigger records: they stay readable.
        """
        found: dict[str, int] = {}
        for candidate in (folder / CONFIG_NAME, folder.parent / CONFIG_NAME):
            try:
                with candidate.open("rb") as handle:
                    limits = tomllib.load(handle).get("limits", {})
            except (OSError, tomllib.TOMLDecodeError, AttributeError):
                continue
            if isinstance(limits, dict):
                found = {
                    k: v
                    for k, v in limits.items()
                    if k in _LIMIT_KEYS and isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**40
                }
            break
        return cls.from_config(Config().replace(**found))


_LIMIT_KEYS = ("max_body_size", "max_header_size", "max_decoded_size", "max_decompression_ratio")
DEFAULT_LIMITS = ReadLimits.from_config(Config())


class RecordError(ArchiveError):
    """One record (or what stands where one should be) cannot be read: file, offset, why."""

    def __init__(self, path: Path, offset: int, why: str) -> None:
        super().__init__(f"{path}: offset {offset}: {why}")
        self.path = path
        self.offset = offset
        self.why = why


@dataclass(frozen=True, slots=True)
class Member:
    """One record as stored: `offset` and `length` on disk, `data` the uncompressed record.

    `problem` says why `data` is empty; `fatal` that the rest of the file cannot be found.
    """

    offset: int
    length: int
    data: bytes
    problem: str | None = None
    fatal: bool = False


def is_gzip(handle: BinaryIO) -> bool:
    start = handle.tell()
    magic = handle.read(2)
    handle.seek(start)
    return magic == GZIP_MAGIC


def iter_members(handle: BinaryIO, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Member]:
    """Every record of a WARC file (gzip per record or uncompressed), in file order.

    After a member whose `fatal` is set nothing more is yielded.
    """
    if not is_gzip(handle):
        offset = 0
        while (record := _plain_record(handle, offset, limits.max_record_size)) is not None:
            yield record
            if record.fatal:
                return
            offset = record.offset + record.length
        return
    for member in gzip_members(handle, limits.max_record_size):
        if isinstance(member, Member):
            yield member
            if _holds_more(member.data):
                yield Member(member.offset, 0, b"", ONE_STREAM, fatal=True)
                return
        else:
            yield _stopped(member, limits.max_record_size)


def read_member(handle: BinaryIO, offset: int, limits: ReadLimits = DEFAULT_LIMITS) -> Member:
    """The one record at `offset` (a gzip member or an uncompressed record)."""
    handle.seek(offset)
    if is_gzip(handle):
        member = next(gzip_members(handle, limits.max_record_size, offset=offset))
        return member if isinstance(member, Member) else _stopped(member, limits.max_record_size)
    found = _plain_record(handle, offset, limits.max_record_size)
    return found or Member(offset, 0, b"", "no record here (end of file)", fatal=True)


def is_one_stream(handle: BinaryIO, limits: ReadLimits = DEFAULT_LIMITS) -> bool:
    """Whether a gzip file's first member goes on past its first record (a file gzipped
    whole, not one member per record).

    Inflates the first record once, in steps, keeping only its header block and what
    follows it; a first record past the cap is not looked past (its reader reports it).
    """
    start = handle.tell()
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    head = b""
    end: int | None = None
    seen = 0
    after = b""
    try:
        while len(after) < 1024 and not inflater.eof:
            chunk = inflater.unconsumed_tail or handle.read(_CHUNK)
            if not chunk:
                break
            piece = inflater.decompress(chunk, _CHUNK)
            if end is None:
                head += piece
                seen = len(head)
                end = record_end(head)
                if end is None:
                    if len(head) > _HEADER_SLACK:
                        return False
                    continue
                if end > limits.max_record_size:
                    return False
                after = head[end:]
                continue
            if seen + len(piece) > end:
                after += piece[max(0, end - seen) :]
            seen += len(piece)
    except zlib.error:
        return False
    finally:
        handle.seek(start)
    return is_record_start(after.lstrip(b"\r\n")) if after.strip(b"\r\n") else False


def split_stream(stream: BinaryIO, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Member]:
    """The records of an uncompressed stream (a one-stream gzip file as `gzip.open` reads
    it), each as it is stored; a record that cannot be read ends the walk with its problem."""
    offset = 0
    while (member := _plain_record(stream, offset, limits.max_record_size)) is not None:
        yield member
        if member.problem:
            return
        offset = member.offset + member.length


def _stopped(stop: GzipStop, cap: int) -> Member:
    match stop.problem:
        case GzipProblem.NUL | GzipProblem.NOT_GZIP:
            why = f"{stop.problem.value} where a record should start"
        case GzipProblem.CORRUPT:
            why = f"corrupt gzip member: {stop.detail}"
        case GzipProblem.TOO_BIG if _holds_more(stop.data):
            why = ONE_STREAM
        case GzipProblem.TOO_BIG:
            why = (
                f"record decompresses to more than {cap} bytes (from {stop.stored} or more stored):"
                " skipped, with the rest of the file"
            )
        case GzipProblem.CUT:
            why = "record cut off (gzip member has no end)"
    return Member(stop.offset, 0, b"", why, fatal=True)


class GzipProblem(enum.Enum):
    """Why a walk over gzip members stops; the value is how a message names it."""

    NUL = "NUL bytes"
    NOT_GZIP = "bytes that are not a gzip member"
    CORRUPT = "corrupt gzip member"
    TOO_BIG = "record too big"
    CUT = "gzip member cut off"


@dataclass(frozen=True, slots=True)
class GzipStop:
    """Where and why a walk over gzip members stopped; each reader words it its own way.

    `data` is what was inflated of the member before the problem (within the cap, for
    naming the record); `stored` the bytes read from `offset` on by then.
    """

    offset: int
    problem: GzipProblem
    data: bytes = b""
    detail: str = ""
    stored: int = 0


def gzip_members(
    handle: BinaryIO, cap: int, *, offset: int = 0, chunk: int = _CHUNK, keep: bool = True
) -> Iterator[Member | GzipStop]:
    """The gzip members from `handle`'s position (file offset `offset`) on, then a
    `GzipStop` if something other than the end of the file ends them.

    The one loop every reader of gzip-per-record files uses, so that the edges of the
    chunks it reads are handled in one place: a member may end anywhere in a chunk, the
    next one's header may straddle two chunks.  Each member is inflated in steps and given
    up on once it exceeds `cap` bytes.  With `keep` false the inflated bytes are only
    counted (memory stays within `chunk`), for a reader that checks structure alone.
    """
    pending = handle.read(chunk)
    while pending:
        if len(pending) < len(GZIP_MAGIC):
            pending += handle.read(chunk)  # the member before ended a byte short of the chunk read
        if not pending.startswith(GZIP_MAGIC):
            kind = GzipProblem.NUL if not pending.strip(b"\0") else GzipProblem.NOT_GZIP
            yield GzipStop(offset, kind, stored=len(pending))
            return
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        pieces: list[bytes] = []
        size = 0
        fed = len(pending)
        data = pending
        while True:
            room = cap + 1 - size
            try:
                piece = inflater.decompress(data, room if keep else min(room, chunk))
            except zlib.error as exc:
                yield GzipStop(offset, GzipProblem.CORRUPT, b"".join(pieces), str(exc), fed)
                return
            size += len(piece)
            if keep:
                pieces.append(piece)
            if size > cap:
                yield GzipStop(offset, GzipProblem.TOO_BIG, b"".join(pieces), stored=fed)
                return
            # eof first: zlib may leave the next member in unconsumed_tail as well
            if inflater.eof:
                pending = inflater.unused_data
                length = fed - len(pending)
                yield Member(offset, length, pieces[0] if len(pieces) == 1 else b"".join(pieces))
                offset += length
                break
            data = inflater.unconsumed_tail
            if not data:
                data = handle.read(chunk)
                if not data:
                    yield GzipStop(offset, GzipProblem.CUT, b"".join(pieces), stored=fed)
                    return
                fed += len(data)
        if not pending:
            pending = handle.read(chunk)


def _plain_record(handle: BinaryIO, offset: int, cap: int) -> Member | None:
    handle.seek(offset)
    head = bytearray()
    tail_of_last = offset > 0
    while True:
        line = handle.readline(_HEADER_SLACK)
        if not line:
            if not head.strip():
                return None
            return Member(offset, 0, b"", "record cut off inside its WARC header block", fatal=True)
        if not head and not line.rstrip(b"\r\n"):
            offset += len(line)  # blank lines between records
            continue
        if not head and tail_of_last and len(line) <= _STRAY_TAIL and not is_record_start(line):
            # the last bytes of a record whose Content-Length is a little short: warcio and
            # pywb skip them too, up to the line end, and read the next record
            offset += len(line)
            tail_of_last = False
            continue
        if not head and (arc := arc_header(line)) is not None:
            return _arc_record(handle, offset, line, arc[1], cap)
        if not head and not is_record_start(line):
            return Member(offset, 0, b"", f"not a WARC record (starts with {line[:20]!r})", fatal=True)
        head += line
        if len(head) > _HEADER_SLACK:
            return Member(offset, 0, b"", "WARC header block too long", fatal=True)
        if not line.rstrip(b"\r\n"):  # also CR CR LF, as some writers end lines
            break
    length = _content_length(bytes(head))
    if length is None:
        return Member(offset, 0, b"", "missing or invalid Content-Length", fatal=True)
    if length > cap:
        if _past_the_end(handle, offset + len(head) + length):
            return Member(offset, 0, b"", f"record cut off: Content-Length says {length}", fatal=True)
        return Member(
            offset,
            len(head) + length + 4,
            b"",
            f"Content-Length {length} is more than the {cap} bytes a record may have: skipped",
        )
    block = handle.read(length)
    if len(block) < length:
        return Member(offset, 0, b"", f"record cut off: Content-Length says {length}", fatal=True)
    block += _line_ends(handle, 4)
    return Member(offset, len(head) + len(block), bytes(head) + block)


def _past_the_end(handle: BinaryIO, end: int) -> bool:
    """Whether a record said to end at `end` runs past the end of the file: skipping it would
    seek beyond what the file system allows (an ARC length of 10^15 made seek fail)."""
    try:
        here = handle.tell()
        size = handle.seek(0, os.SEEK_END)
        handle.seek(here)
    except (OSError, ValueError):
        return False
    return end > size


def _line_ends(handle: BinaryIO, most: int) -> bytes:
    """Up to `most` CR and LF bytes from `handle`, consuming nothing else: a record's
    trailer is CRLF CRLF, but some writers end a record with fewer line breaks."""
    peek = getattr(handle, "peek", None)
    if peek is not None:
        ahead = peek(most)[:most]
    else:
        start = handle.tell()
        ahead = handle.read(most)
        handle.seek(start)
    count = len(ahead) - len(ahead.lstrip(b"\r\n"))
    return handle.read(count) if count else b""


def _arc_record(handle: BinaryIO, offset: int, line: bytes, length: int, cap: int) -> Member:
    """The ARC record whose header `line` was just read: the line, the block, its newline."""
    if length > cap:
        if _past_the_end(handle, offset + len(line) + length):
            return Member(offset, 0, b"", f"ARC record cut off: its header says {length} bytes", fatal=True)
        return Member(
            offset, len(line) + length + 1, b"", f"ARC record of {length} bytes is more than {cap}: skipped"
        )
    block = handle.read(length)
    if len(block) < length:
        return Member(offset, 0, b"", f"ARC record cut off: its header says {length} bytes", fatal=True)
    after = handle.read(1)
    end = len(after) if after == b"\n" else 0
    return Member(offset, len(line) + length + end, line + block + after[:end])


def arc_header(line: bytes) -> tuple[str, int] | None:
    """(URL, block length) of an ARC record's header `line`; None when it is not one."""
    found = _ARC_HEADER.match(line) if len(line) <= _ARC_LINE_MAX else None
    if found is None:
        return None
    return found["url"].decode("utf-8", "replace"), int(found["length"])


def is_record_start(line: bytes) -> bool:
    """Whether `line` opens a record: a WARC version line (``warc/1.0`` too, any case) or an
    ARC header line."""
    return line[:5].upper() == b"WARC/" or arc_header(line.split(b"\n", 1)[0] + b"\n") is not None


def record_end(data: bytes) -> int | None:
    """Where the first record of `data` (uncompressed) ends, trailer included; None when
    its header block is not all there or says no length."""
    if data[:5].upper() != b"WARC/":
        line_end = data.find(b"\n", 0, _ARC_LINE_MAX)
        arc = arc_header(data[: line_end + 1]) if line_end >= 0 else None
        if arc is None:
            return None
        end = line_end + 1 + arc[1]
        return end + 1 if data[end : end + 1] == b"\n" else end
    head_end = data.find(b"\r\n\r\n", 0, _HEADER_SLACK)
    if head_end < 0:
        return None
    length = _CONTENT_LENGTH.search(data, 0, head_end + 2)
    return None if length is None else head_end + 4 + int(length[1]) + 4


def _holds_more(data: bytes) -> bool:
    """Whether `data`, one inflated gzip member, goes on past its first record."""
    end = record_end(data)
    if end is None or len(data) <= end:
        return False
    return is_record_start(data[end : end + 1024].lstrip(b"\r\n"))


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\n"):
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            value = value.strip()
            return int(value) if value.isdigit() and len(value) <= 18 else None
    return None


def parse_record(member: Member, path: Path) -> Any:
    """The warcio record of `member` (its payload readable from ``raw_stream``); an ARC
    record in its WARC form."""
    try:
        iterator = ArchiveIterator(io.BytesIO(member.data), arc2warc=True)
        record = next(iterator)
        # warcio reads the payload lazily: read it now, while errors can still be named
        payload = record.raw_stream.read()
        record.raw_stream = io.BytesIO(payload)
        iterator.close()
    except (ArchiveLoadFailed, StopIteration, EOFError, ValueError, AttributeError, TypeError) as exc:
        raise RecordError(
            path, member.offset, f"not a readable WARC record: {exc or type(exc).__name__}"
        ) from None
    return record
