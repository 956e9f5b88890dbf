"""The file names each reader accepts, in one place (no import of warcio: the command line uses them)."""

from __future__ import annotations

__all__ = ["ARC_NAMES", "IMPORT_NAMES", "OPEN_NAMES", "READ_NAMES", "STORED_NAMES", "WACZ_NAME"]

ARC_NAMES = (".arc.gz", ".arc")
"""ARC files: read in place, as warcio and pywb read them."""
STORED_NAMES = (".warc.gz", ".warc", *ARC_NAMES)
"""Finished files an archive holds and every reader reads."""
OPEN_NAMES = (".warc.gz.open", ".warc.open")
"""Files a crawl is still writing."""
READ_NAMES = (*STORED_NAMES, *OPEN_NAMES)
WACZ_NAME = ".wacz"
IMPORT_NAMES = (*STORED_NAMES, WACZ_NAME)
"""What ``reindex --warc`` takes: a WACZ file is unpacked into the archive's WARC files."""
