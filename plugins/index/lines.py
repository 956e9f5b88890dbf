"""Which WARC record holds a page the crawl has just archived, found in the CDXJ lines being written.

The WARC writer appends each record's CDXJ line to ``NAME.cdxj.open`` beside the WARC file it
writes, right after the record, and answers the crawl only once both are written; the index's
`page_fetched` runs after the WARC plugin's (``trylast``).  So when the spool thread takes a
page, its line is on disk, and the spool keeps a reference to the record (file, offset,
length) instead of a copy of the page.  A line counts only when it names the page's URI and
capture second, a response (not a revisit) with the page's status, and the SHA-1 of the body
the crawl received: never another capture of the same URL.  A page without such a line (no
WARC written, ``--disable-plugin warc``, CDXJ lines turned off, a revisit) is spooled as a copy.

The lines are read as their files grow, each byte once, through handles kept open: a file the
writer rotated out (sorted into ``NAME.cdxj``, its ``.open`` file removed) is still read to
its end.  Only the most recent lines are kept, keyed by SURT and second, and only the line of
a page is parsed.
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..archive_reader.capture import Capture as Line
from ..archive_reader.digests import payload_digest
from ..archive_reader.surt import surt
from .store import RecordRef

LINES_SUFFIX = ".cdxj.open"
READ_SIZE = 1 << 20
"""Bytes of lines read at a time: a large file met late (another crawl's) is read in steps."""
KEPT_LINES = 8192
"""Lines kept for pages not handed over yet: the records of the pages in flight (their
requisites' lines included) are a few hundred at most; an older one evicted only costs a copy."""


@dataclass(frozen=True, slots=True)
class Stored:
    """What finds a page's response record: the URI the record names, its capture second (14
    digits), its status and its body as stored (Content-Encoding kept)."""

    target: str
    time: str
    status: int
    body: bytes


class RecordLines:
    """The CDXJ lines of the WARC files being written in `folder`; used by one thread."""

    def __init__(self, folder: Path, kept: int = KEPT_LINES) -> None:
        self.folder = folder
        self.kept = kept
        self._files: dict[str, BinaryIO] = {}
        self._partial: dict[str, bytes] = {}
        self._lines: OrderedDict[bytes, bytes] = OrderedDict()

    def locate(self, pages: Sequence[Stored]) -> list[RecordRef | None]:
        """The record of each page (None: keep a copy of it), in the order of `pages`."""
        if not pages:
            return []
        self._read_new()
        keys = [f"{surt(page.target)} {page.time}".encode() for page in pages]
        if any(key not in self._lines for key in keys):
            self._open_new()  # a WARC file started since the last look
            self._read_new()
        lines = [self._lines.pop(key, None) for key in keys]
        return [self._reference(line, page) for line, page in zip(lines, pages, strict=True)]

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()
        self._partial.clear()
        self._lines.clear()

    def _reference(self, raw: bytes | None, page: Stored) -> RecordRef | None:
        if raw is None:
            return None
        try:
            line = Line.from_cdxj(raw.decode("utf-8"))
        except (ValueError, KeyError, TypeError):
            return None
        if (
            line.url != page.target
            or line.is_revisit
            or line.status != page.status
            or line.digest != payload_digest(page.body)
        ):
            return None
        return RecordRef(line.filename, line.offset, line.length, line.url, line.digest)

    def _open_new(self) -> None:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return  # no WARC folder: nothing is archived as WARC
        for name in names:
            if name.endswith(LINES_SUFFIX) and name not in self._files:
                with contextlib.suppress(OSError):  # closed and removed since the listing
                    self._files[name] = (self.folder / name).open("rb")

    def _read_new(self) -> None:
        for name, handle in list(self._files.items()):
            try:
                gone = os.fstat(handle.fileno()).st_nlink == 0  # before the read: then read whole
                while data := handle.read(READ_SIZE):
                    self._take(name, data)
            except OSError:
                gone = True
            if gone:  # rotated out and read to its end: its last lines are kept
                handle.close()
                del self._files[name]
                self._partial.pop(name, None)

    def _take(self, name: str, data: bytes) -> None:
        *lines, rest = (self._partial.pop(name, b"") + data).split(b"\n")
        if rest:
            self._partial[name] = rest  # a line still being written
        kept = self._lines
        for line in lines:
            first = line.find(b" ")
            second = line.find(b" ", first + 1)
            if first <= 0 or second <= 0:
                continue
            key = line[:second]
            kept[key] = line
            kept.move_to_end(key)
            if len(kept) > self.kept:
                kept.popitem(last=False)
