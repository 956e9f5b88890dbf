"""A page's text for its snippet, read from its WARC record when a search shows it.

The index keeps no copy of the pages' text (the WARC files hold the pages; a copy was a
third of the index): a hit's record is found by its URL and capture time in the CDXJ
files beside the WARC files, read by the archive reader without loading its index
(`WarcArchive.captures_in_files`); its body is decoded and
its text extracted as the index extracted it (the same words at the same positions, which
the phrase marks need; parsing the page again is most of a snippet's cost).  A revisit is resolved through the
archive's reader (which indexes the archive once for its payload digests).  The texts of
the last pages shown are kept, so paging through results reads each record once.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from pathlib import Path

from archiver.api import ArchiverError

from ..archive_reader.capture import Capture
from ..archive_reader.members import ReadLimits, RecordError
from ..archive_reader.reader import WarcArchive, open_archive
from ..markup.text import extract, sniff_encoding

log = logging.getLogger("archiver.index")

KEPT_TEXTS = 32
"""Texts of recently shown pages kept in memory (a few MB at most)."""
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
        found = self._reader.captures_in_files(url)
        found = [c for c in found if c.timestamp.isdigit()]
        wanted = int(time) if time.isdigit() else 0
        return min(found, key=lambda c: (abs(int(c.timestamp) - wanted), -c.offset), default=None)
