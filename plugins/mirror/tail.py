"""Find a WARC file's damaged tail cheaply: only the bytes after its last indexed record.

A crawl killed mid-write (or a copy cut short) leaves a gzip member without its end.
The reader already stops at it; the export still has to say so, and the WACZ must not
carry the broken bytes.  Checking only what follows the last record the index knows
keeps a re-export fast; `archiver verify`-style full checks are the WARC plugin's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..archive_reader.members import (
    DEFAULT_LIMITS,
    GZIP_MAGIC,
    GzipProblem,
    GzipStop,
    ReadLimits,
    gzip_members,
)
from ..archive_reader.reader import Capture

__all__ = ["Tail", "check_tail"]

_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Tail:
    """`good_end`: the offset just past the last whole gzip member; `problem`: what follows."""

    path: Path
    good_end: int
    size: int
    problem: str | None

    @property
    def damaged(self) -> bool:
        return self.problem is not None


def check_tail(path: Path, captures: Iterable[Capture], limits: ReadLimits = DEFAULT_LIMITS) -> Tail:
    """Scan the gzip members of `path` from the end of its last indexed record to EOF."""
    size = path.stat().st_size
    start = max((c.offset + c.length for c in captures), default=0)
    if start > size:
        return Tail(path, size, size, f"the index points {start - size} bytes past the end of the file")
    with path.open("rb") as handle:
        head = handle.read(2)
        if head and head != GZIP_MAGIC:
            return Tail(path, size, size, None)  # an uncompressed WARC: not checked here
        handle.seek(start)
        for member in gzip_members(handle, limits.max_record_size, offset=start, chunk=_CHUNK, keep=False):
            if isinstance(member, GzipStop):
                return Tail(path, member.offset, size, _tail_problem(member, size, limits))
    return Tail(path, size, size, None)


def _tail_problem(stop: GzipStop, size: int, limits: ReadLimits) -> str:
    offset = stop.offset
    match stop.problem:
        case GzipProblem.NUL:
            return f"{size - offset} NUL bytes at offset {offset}"
        case GzipProblem.NOT_GZIP:
            return f"{size - offset} bytes that are not a WARC record at offset {offset}"
        case GzipProblem.CORRUPT:
            return f"corrupt record at offset {offset}: {stop.detail}"
        case GzipProblem.TOO_BIG:
            return f"record at offset {offset} decompresses to more than {limits.max_record_size} bytes"
        case _:
            return f"record at offset {offset} is cut off ({size - offset} bytes)"
