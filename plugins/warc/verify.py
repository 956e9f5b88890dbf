"""A strict WARC verifier, and crash recovery that cuts a file back to its last whole record.

The usual readers are lenient: warcio returns a record cut off in the middle of its
body as if it were whole, and ``warcio check`` exits 0 on it.  `verify_file` checks
what a reader would need to trust the file:

* every gzip member ends properly (end-of-stream marker, CRC-32 and length trailer),
  and nothing but gzip members follows (a crash can leave NUL bytes);
* each record starts with a ``WARC/`` version line and has a Content-Length (an ARC
  record: a header line whose length its block has);
* the record block is exactly Content-Length bytes, followed by CRLF CRLF;
* WARC-Block-Digest and WARC-Payload-Digest match (sha1/sha256/sha512/md5, in base32
  or hex); for a response stored with ``Transfer-Encoding: chunked`` the payload
  digest may be over the de-chunked body, as the WARC 1.1 guidelines recommend.

Each fault names the file, the byte offset of the record (its gzip member) and the
record (type, WARC-Record-ID, target URI).  `VerifyReport.good_end` is the offset just
past the last record of the unbroken prefix of whole records: the place to cut a file
back to after a crash (`truncate_to_last_good`).  Digest mismatches are reported but
do not end that prefix (the record is whole, its content is wrong).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..archive_reader.digests import digest_matches
from ..archive_reader.members import (
    DEFAULT_LIMITS,
    GZIP_MAGIC,
    GzipProblem,
    GzipStop,
    Member,
    ReadLimits,
    arc_header,
    gzip_members,
)
from ..archive_reader.payload import dechunk

__all__ = ["Fault", "VerifyReport", "truncate_to_last_good", "verify_file"]

_CHUNK = 1024 * 1024
_MAX_HEADER_BLOCK = 1024 * 1024
_TOO_BIG = "record is more than"


@dataclass(frozen=True, slots=True)
class Fault:
    """One problem: where (file, byte offset of the record or member), which record, what."""

    path: Path
    offset: int
    record: str
    message: str
    fatal: bool = True
    """True when the file cannot be read past this point (a cut or garbage)."""

    def __str__(self) -> str:
        return f"{self.path}: offset {self.offset}: {self.record}: {self.message}"


@dataclass
class VerifyReport:
    """What `verify_file` found in one file."""

    path: Path
    size: int = 0
    records: int = 0
    good_end: int = 0
    """Offset just past the last whole record before the first fatal fault."""
    faults: list[Fault] = field(default_factory=list)
    gzip: bool = True

    @property
    def ok(self) -> bool:
        return not self.faults


@dataclass
class _Record:
    """The parsed parts of one record, enough to name it and check it."""

    headers: list[tuple[str, str]]
    block: bytes

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return None

    @property
    def label(self) -> str:
        parts = [
            self.header("WARC-Type") or "record",
            self.header("WARC-Record-ID") or "",
            self.header("WARC-Target-URI") or "",
        ]
        return " ".join(p for p in parts if p)


class _Cut(Exception):
    """The record cannot be read to its end; `label` names what was read of it."""

    def __init__(self, message: str, label: str = "record", fatal: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.label = label
        self.fatal = fatal


def verify_file(path: Path | str, limits: ReadLimits = DEFAULT_LIMITS) -> VerifyReport:
    """Check every record of one WARC file (gzip per record, or uncompressed).

    A record larger than `limits.max_record_size` is a fault (a decompression bomb
    is not inflated further).  Never raises for damage (it is reported); raises
    OSError when the file cannot be read at all.
    """
    path = Path(path)
    report = VerifyReport(path=path, size=path.stat().st_size)
    with path.open("rb") as handle:
        report.gzip = handle.read(2) == GZIP_MAGIC
        handle.seek(0)
        if report.gzip:
            _verify_gzip(handle, report, limits.max_record_size)
        else:
            _verify_plain(handle, report, limits.max_record_size)
    return report


def truncate_to_last_good(path: Path | str, limits: ReadLimits = DEFAULT_LIMITS) -> int:
    """Cut `path` back to the end of its last whole record; return the bytes removed.

    For a file left behind by a crash or a full disk.  The file is opened ``r+b``
    (never a mode that empties it first) and only ever shortened.
    """
    path = Path(path)
    report = verify_file(path, limits)
    removed = report.size - report.good_end
    if removed > 0 and any(fault.fatal for fault in report.faults):
        with path.open("r+b") as handle:
            handle.truncate(report.good_end)
            handle.flush()
            os.fsync(handle.fileno())
        return removed
    return 0


# -- gzip ------------------------------------------------------------------------------


def _verify_gzip(handle: BinaryIO, report: VerifyReport, cap: int) -> None:
    for member in gzip_members(handle, cap, chunk=_CHUNK):
        if not isinstance(member, Member):
            report.faults.append(_stop_fault(member, report, cap))
            return
        offset, data = member.offset, member.data
        records = 0
        position = 0
        while position < len(data):
            if not data[position : position + 4].strip(b"\r\n") and len(data) - position <= 4:
                break  # the newline ARC writers put between records
            try:
                record, position = _parse_record(io.BytesIO(data), position, cap)
            except _Cut as cut:
                report.faults.append(Fault(report.path, offset, cut.label, cut.message))
                return
            records += 1
            report.records += 1
            _check_digests(record, offset, report)
        if records == 0:
            report.faults.append(Fault(report.path, offset, "gzip member", "empty gzip member"))
            return
        if records > 1:
            report.faults.append(
                Fault(
                    report.path,
                    offset,
                    "gzip member",
                    f"holds {records} records (one per member is needed to seek to each)",
                    fatal=False,
                )
            )
        report.good_end = offset + member.length


def _stop_fault(stop: GzipStop, report: VerifyReport, cap: int) -> Fault:
    """The fault that ends the walk; too big is not damage: nothing is cut after it."""
    label = _label_of_partial(stop.data[:_MAX_HEADER_BLOCK]) if stop.data else "gzip member"
    match stop.problem:
        case GzipProblem.NUL | GzipProblem.NOT_GZIP:
            rest = report.size - stop.offset
            message = f"{rest} {stop.problem.value} after the last whole record"
        case GzipProblem.CORRUPT:
            message = f"corrupt gzip member: {stop.detail}"
        case GzipProblem.TOO_BIG:
            return Fault(
                report.path, stop.offset, label, f"{_TOO_BIG} {cap} bytes: not checked past it", False
            )
        case _:
            message = "gzip member cut off (no end of stream, CRC or length trailer)"
    return Fault(report.path, stop.offset, label, message)


def _label_of_partial(data: bytes) -> str:
    end = data.find(b"\r\n\r\n")
    try:
        return _parse_headers(data[: end if end >= 0 else len(data)])[0].label
    except _Cut:
        return "record"


# -- uncompressed ----------------------------------------------------------------------


def _verify_plain(handle: BinaryIO, report: VerifyReport, cap: int) -> None:
    offset = 0
    while True:
        start = handle.tell()
        peek = handle.read(1)
        if not peek:
            return
        if peek == b"\n":  # between two ARC records
            continue
        handle.seek(start)
        if peek == b"\0":
            rest = report.size - start
            report.faults.append(
                Fault(report.path, start, "end of file", f"{rest} NUL bytes after the last record")
            )
            return
        try:
            record, _ = _parse_record(handle, start, cap)
        except _Cut as cut:
            report.faults.append(Fault(report.path, start, cut.label, cut.message, fatal=cut.fatal))
            return
        offset = handle.tell()
        report.records += 1
        _check_digests(record, start, report)
        report.good_end = offset


# -- records ---------------------------------------------------------------------------


def _parse_record(handle: BinaryIO, start: int, cap: int) -> tuple[_Record, int]:
    """Read one record at `start`; return it and the offset just past its trailer."""
    handle.seek(start)
    first = handle.readline(_MAX_HEADER_BLOCK)
    arc = arc_header(first)
    if arc is not None:
        return _parse_arc(handle, first, *arc, cap)
    handle.seek(start)
    lines: list[bytes] = []
    size = 0
    while True:
        line = handle.readline(_MAX_HEADER_BLOCK)
        size += len(line)
        if not line:
            label = _parse_headers(b"".join(lines))[0].label if lines else "record"
            raise _Cut("record cut off inside its WARC header block", label)
        if size > _MAX_HEADER_BLOCK:
            raise _Cut("WARC header block longer than 1 MiB")
        if not line.rstrip(b"\r\n"):
            break
        lines.append(line)
    record, length = _parse_headers(b"".join(lines))
    if length > cap:
        here = handle.tell()
        remaining = handle.seek(0, io.SEEK_END) - here
        handle.seek(here)
        if length + 4 > remaining:
            raise _Cut(
                f"record cut off: Content-Length says {length}, {remaining} bytes follow", record.label
            )
        raise _Cut(f"{_TOO_BIG} {cap} bytes: not checked past it", record.label, fatal=False)
    block = handle.read(length)
    if len(block) < length:
        raise _Cut(
            f"record cut off: block is {len(block)} bytes, Content-Length says {length}",
            record.label,
        )
    trailer = handle.read(4)
    if trailer != b"\r\n\r\n":
        raise _Cut(
            "block does not end where Content-Length says (no CRLF CRLF after it)"
            if trailer
            else "record cut off: the CRLF CRLF after the block is missing",
            record.label,
        )
    record.block = block
    return record, handle.tell()


def _parse_arc(handle: BinaryIO, line: bytes, url: str, length: int, cap: int) -> tuple[_Record, int]:
    """An ARC record: its header line, `length` bytes of block, a newline (ARC has no digests)."""
    record = _Record([("WARC-Type", "arc"), ("WARC-Target-URI", url)], b"")
    if length > cap:
        raise _Cut(f"{_TOO_BIG} {cap} bytes: not checked past it", record.label, fatal=False)
    block = handle.read(length)
    if len(block) < length:
        raise _Cut(f"ARC record cut off: block is {len(block)} bytes, its header says {length}", record.label)
    after = handle.read(1)
    if after and after != b"\n":
        raise _Cut("block does not end where the ARC header says (no newline after it)", record.label)
    record.block = block
    return record, handle.tell()


def _parse_headers(data: bytes) -> tuple[_Record, int]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if not lines or lines[0][:5].upper() != "WARC/":
        raise _Cut(f"not a WARC record (starts with {data[:20]!r})")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        line = line.rstrip("\r")
        if not line:
            continue
        if line[0] in " \t" and headers:  # a continuation line (WARC 1.1, section 4)
            name, value = headers[-1]
            headers[-1] = (name, f"{value} {line.strip()}")
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _Cut(f"malformed WARC header line {line[:60]!r}")
        headers.append((name.strip(), value.strip()))
    record = _Record(headers, b"")
    raw_length = record.header("Content-Length")
    if raw_length is None or not raw_length.isdigit():
        raise _Cut(f"missing or invalid Content-Length {raw_length!r}", record.label)
    return record, int(raw_length)


def _check_digests(record: _Record, offset: int, report: VerifyReport) -> None:
    block_digest = record.header("WARC-Block-Digest")
    if block_digest and not digest_matches(block_digest, [record.block]):
        report.faults.append(
            Fault(report.path, offset, record.label, "WARC-Block-Digest mismatch", fatal=False)
        )
    payload_digest = record.header("WARC-Payload-Digest")
    kind = record.header("WARC-Type")
    if not payload_digest or kind not in ("response", "request", "resource"):
        return
    candidates = _payloads(record)
    if candidates is not None and not digest_matches(payload_digest, candidates):
        report.faults.append(
            Fault(report.path, offset, record.label, "WARC-Payload-Digest mismatch", fatal=False)
        )


def _payloads(record: _Record) -> list[bytes] | None:
    """The byte strings the payload digest may be over; None when it cannot be checked."""
    content_type = (record.header("Content-Type") or "").lower()
    if not content_type.startswith("application/http"):
        return [record.block]
    end = record.block.find(b"\r\n\r\n")
    if end < 0:
        return None
    head, body = record.block[:end], record.block[end + 4 :]
    candidates = [body]
    if b"transfer-encoding" in head.lower() and b"chunked" in head.lower():
        dechunked = dechunk(body)
        if dechunked is not None:
            candidates.append(dechunked)
    return candidates
