"""The ``[plugins.warc]`` table, checked by the core (`archiver.settings`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from archiver.api import setting

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _file_name_part(prefix: str) -> str | None:
    return None if _PREFIX.match(prefix) else f"must be 1-64 letters, digits, '.', '_' or '-', got {prefix!r}"


@dataclass(frozen=True)
class WarcSettings:
    """Effective WARC writer settings; docs/warc.md explains each one."""

    prefix: str = setting("archiver", check=_file_name_part)
    """First part of every file name (IIPC: prefix-timestamp-serial-host-pid)."""
    max_size: int = setting(1_000_000_000, low=64 * 1024, high=1 << 40)
    """Start a new file once the current one would grow past this many bytes."""
    gzip: bool = True
    """One gzip member per record (.warc.gz); off writes plain .warc files."""
    gzip_level: int = setting(3, low=1, high=9)
    """gzip level 1-9 (zlib's scale): 1-3 are compressed with ISA-L, 3 to 4 times less CPU than
    zlib's; 3 is as small as zlib's 3, ~4% larger than 6 (HTML of the bench site); 6 is within
    1% of 9."""
    dedup: bool = True
    """Write a revisit record instead of a second copy of an identical payload."""
    metadata: bool = True
    """Write a metadata record with each page's outlinks."""
    cdxj: bool = True
    """Write NAME.cdxj beside each WARC file when it is closed."""
    queue_size: int = setting(64, low=1, high=10_000)
    """Pages handed to the writer process and not yet written; more waits (bounded memory).
    Room for the crawl to run ahead while the writer gets less CPU for a moment."""
    fsync: bool = False
    """fsync after every group of pages written together: survives power loss, costs a disk flush
    per group (up to 8 pages)."""
