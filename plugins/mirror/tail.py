"""Find a WARC file's damaged tail cheaply: only the bytes after its last indexed record.

A crawl killed mid-write (or a copy cut short) leaves a gzip member without its end.
The reader already stops at it; the export still has to say so, and the WACZ must not
carry the broken bytes.  Checking only what follows the last record the index knows
keeps a re-export fast; `archiver verify`-style full checks are the WARC plugin's job.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..warc.members import DEFAULT_LIMITS, ReadLimits
from ..warc.reader import Capture

__all__ = ["Tail", "check_tail"]

_CHUNK = 1024 * 1024
_MAGIC = b"\x1f\x8b"


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
        if head and head != _MAGIC:
            return Tail(path, size, size, None)  # an uncompressed WARC: not checked here
        handle.seek(start)
        offset = start
        pending = handle.read(_CHUNK)
        while pending:
            if len(pending) < len(_MAGIC):
                pending += handle.read(_CHUNK)  # the member before ended a byte short of the chunk read
            if not pending.startswith(_MAGIC):
                rest = size - offset
                what = "NUL bytes" if not pending.strip(b"\0") else "bytes that are not a WARC record"
                return Tail(path, offset, size, f"{rest} {what} at offset {offset}")
            decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
            consumed = 0
            inflated = 0
            data = pending
            while True:
                try:
                    inflated += len(decompressor.decompress(data, _CHUNK))
                except zlib.error as exc:
                    return Tail(path, offset, size, f"corrupt record at offset {offset}: {exc}")
                if inflated > limits.max_record_size:
                    why = (
                        f"record at offset {offset} decompresses to more than {limits.max_record_size} bytes"
                    )
                    return Tail(path, offset, size, why)
                if decompressor.unconsumed_tail:
                    consumed += len(data) - len(decompressor.unconsumed_tail)
                    data = decompressor.unconsumed_tail
                    continue
                if decompressor.eof:
                    length = consumed + len(data) - len(decompressor.unused_data)
                    offset += length
                    pending = decompressor.unused_data or handle.read(_CHUNK)
                    break
                consumed += len(data)
                data = handle.read(_CHUNK)
                if not data:
                    return Tail(
                        path, offset, size, f"record at offset {offset} is cut off ({size - offset} bytes)"
                    )
    return Tail(path, size, size, None)
