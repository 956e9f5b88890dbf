"""The ``[plugins.warc]`` table: every key checked, unknown keys refused by name."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from archiver.config import check_number
from archiver.errors import ConfigError

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class WarcSettings:
    """Effective WARC writer settings; docs/warc.md explains each one."""

    prefix: str = "archiver"
    """First part of every file name (IIPC: prefix-timestamp-serial-host-pid)."""
    max_size: int = 1_000_000_000
    """Start a new file once the current one would grow past this many bytes."""
    gzip: bool = True
    """One gzip member per record (.warc.gz); off writes plain .warc files."""
    gzip_level: int = 3
    """zlib level 1-9: 3 costs about half of 6's CPU for files ~4% larger (HTML of the bench
    site); 6 is within 1% of 9."""
    dedup: bool = True
    """Write a revisit record instead of a second copy of an identical payload."""
    metadata: bool = True
    """Write a metadata record with each page's outlinks."""
    cdxj: bool = True
    """Write NAME.cdxj beside each WARC file when it is closed."""
    queue_size: int = 64
    """Pages handed to the writer process and not yet written; more waits (bounded memory).
    Room for the crawl to run ahead while the writer gets less CPU for a moment."""
    fsync: bool = False
    """fsync after every page: survives power loss, costs a disk flush per page."""


BOUNDS = {"max_size": (64 * 1024, 1 << 40), "gzip_level": (1, 9), "queue_size": (1, 10_000)}


def parse_settings(table: Mapping[str, Any]) -> WarcSettings:
    """Check `table` against `WarcSettings`; raise ConfigError naming a bad key or value."""
    known = {f.name: f for f in fields(WarcSettings)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            match = difflib.get_close_matches(key, list(known), n=1)
            hint = f" (did you mean {match[0]!r}?)" if match else ""
            raise ConfigError(f"unknown key plugins.warc.{key}{hint}")
        default = known[key].default
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"plugins.warc.{key}: expected true or false, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"plugins.warc.{key}: expected a whole number, got {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"plugins.warc.{key}: expected a string, got {value!r}")
        values[key] = value
    settings = WarcSettings(**values)
    if not _PREFIX.match(settings.prefix):
        raise ConfigError(
            f"plugins.warc.prefix: {settings.prefix!r} must be 1-64 letters, digits, '.', '_' or '-'"
        )
    for key, (low, high) in BOUNDS.items():
        check_number(f"plugins.warc.{key}", getattr(settings, key), low, high)
    return settings
