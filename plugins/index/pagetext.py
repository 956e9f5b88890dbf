"""A page's text for its snippet, read from its WARC record when a search shows it.

The index keeps no copy of the pages' text (the WARC files hold the pages; a copy was a
third of the index): a hit's record is found by its URL and capture time in the CDXJ
files beside the WARC files, by binary search in each sorted file (no index loaded), or
by a scan of the unsorted lines of a file still being written; its body is decoded and
its text extracted as the index extracted it (the same words at the same positions, which
the phrase marks need; parsing the page again is most of a snippet's cost).  A revisit is resolved through the
archive's reader (which indexes the archive once for its payload digests).  The texts of
the last pages shown are kept, so paging through results reads each record once.
"""

from __future__ import annotations

import logging
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO

from archiver.api import ArchiverError

from ..archive_reader.capture import Capture
from ..archive_reader.cdxj import cdxj_path_for
from ..archive_reader.members import ReadLimits, RecordError
from ..archive_reader.reader import WarcArchive, open_archive
from ..archive_reader.surt import surt
from ..markup.text import extract, sniff_encoding

log = logging.getLogger("archiver.index")

KEPT_TEXTS = 32
"""Texts of recently shown pages kept in memory (a few MB at most)."""
_WARC = (".warc.gz", ".warc", ".warc.gz.open", ".warc.open")
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\"';\s]+)", re.IGNORECASE)


class PageTexts:
    """The extracted text of an archive's pages by URL and capture time."""

    def __init__(self, archive: Path, max_chars: int) -> None:
        self.max_chars = max_chars
        self._reader: WarcArchive = open_archive(archive, ReadLimits.for_archive(archive))
        self._kept: OrderedDict[tuple[str, str], str] = OrderedDict()

    def text(self, url: str, time: str) -> str:
        """The page's text ('' when its record cannot be found or read)."""
        key = (url, time)
        held = self._kept.get(key)
        if held is not None:
            self._kept.move_to_end(key)
            return held
        try:
            text = self._read(url, time)
        except (OSError, ArchiverError, RecordError, ValueError) as exc:
            log.debug("snippet of %s: %s", url, exc)
            text = ""
        self._kept[key] = text
        if len(self._kept) > KEPT_TEXTS:
            self._kept.popitem(last=False)
        return text

    def _read(self, url: str, time: str) -> str:
        capture = self._find(url, time)
        if capture is None:
            return ""
        response = self._reader.read(capture)
        content = response.content()
        declared = _CHARSET.search(response.header("Content-Type") or "")
        encoding = sniff_encoding(content, declared.group(1) if declared else None)
        return extract(content, response.content_type or "text/html", encoding, self.max_chars).text

    def _find(self, url: str, time: str) -> Capture | None:
        """The capture of `url` nearest to `time` (the index's capture time is the WARC-Date
        to the second, so normally the one taken then)."""
        key = surt(url)
        found: list[Capture] = []
        folder = self._reader.folder
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return None
        for name in names:
            path = folder / name
            if name.endswith(".cdxj.open"):
                found += _scan(path, key)
            elif name.endswith(".cdxj"):
                found += _bisect(path, key)
            elif name.endswith(_WARC) and not _has_lines(path):  # imported without a CDXJ file
                found += [c for c in self._reader.captures(url) if c.filename == name]
        found = [c for c in found if c.timestamp.isdigit()]
        wanted = int(time) if time.isdigit() else 0
        return min(found, key=lambda c: (abs(int(c.timestamp) - wanted), -c.offset), default=None)


def _has_lines(warc: Path) -> bool:
    cdxj = cdxj_path_for(warc)
    return cdxj.exists() or cdxj.with_name(cdxj.name + ".open").exists()


def _lines_of(key: str, lines: Any) -> list[Capture]:
    prefix = (key + " ").encode("utf-8")
    found = []
    for line in lines:
        if line.startswith(prefix):
            try:
                found.append(Capture.from_cdxj(line.decode("utf-8")))
            except (ValueError, KeyError, TypeError):
                continue
    return found


def _scan(path: Path, key: str) -> list[Capture]:
    """The lines of `key` in an unsorted CDXJ file (a WARC file still being written)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    needle = (key + " ").encode("utf-8")
    lines = []
    start = data.find(needle)
    while start >= 0:
        if start == 0 or data[start - 1 : start] == b"\n":
            end = data.find(b"\n", start)
            lines.append(data[start : end if end >= 0 else len(data)])
        start = data.find(needle, start + 1)
    return _lines_of(key, lines)


def _bisect(path: Path, key: str) -> list[Capture]:
    """The lines of `key` in a sorted CDXJ file, found by binary search over its bytes."""
    wanted = (key + " ").encode("utf-8")
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            low, high = 0, size
            while low < high:  # the first line start at or after `middle` whose key >= wanted
                middle = (low + high) // 2
                line_start, line = _line_after(handle, middle)
                if line is None or line[: len(wanted)] >= wanted:
                    high = middle
                else:
                    low = line_start + len(line)
            handle.seek(_line_after(handle, low)[0])
            lines = []
            for line in handle:
                if not line.startswith(wanted):
                    break
                lines.append(line)
    except OSError:
        return []
    return _lines_of(key, lines)


def _line_after(handle: BinaryIO, offset: int) -> tuple[int, bytes | None]:
    """(start, bytes) of the first line starting at or after `offset` (None past the end)."""
    if offset == 0:
        handle.seek(0)
    else:
        handle.seek(offset - 1)
        handle.readline()  # the rest of the line `offset` falls in (or just its newline)
    start = handle.tell()
    line = handle.readline()
    return start, line or None
