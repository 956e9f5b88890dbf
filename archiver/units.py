"""Counts, sizes and durations as every message prints them, and as people write them.

One way to say "1 page" and "34.9 MB".  Sizes are decimal (1 kB = 1,000 bytes, 1 MB =
1,000,000 bytes), as disks and networks count them, so the progress line, the crawl summary,
the export and the limits all give the same figure: `--max-bytes 500M` is 500,000,000 bytes
and stops the crawl at "500.0 MB".  The binary units are there for who wants them, by their
own names (`500MiB`).  Durations take `s`, `m`, `h` and `d`, alone or in a row (`1h30m`); a
bare number is bytes or seconds.
"""

from __future__ import annotations

import re

__all__ = ["human_duration", "parse_duration", "parse_size", "plural", "size"]

_UNITS = ("kB", "MB", "GB", "TB")
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(i?)b?|b)?\s*", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])", re.IGNORECASE)
_DURATION_FACTORS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``1,024 pages``: `nouns` when the plural is not `noun` + s."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def size(count: float) -> str:
    """A byte count in decimal units: ``512 B``, ``34.9 MB``."""
    if count < 1000:
        return f"{count:.0f} B"
    for unit in _UNITS:
        count /= 1000
        if count < 999.95 or unit == _UNITS[-1]:
            return f"{count:.1f} {unit}"
    raise AssertionError("unreachable")


def parse_size(text: str) -> int:
    """Bytes of `500M`, `2GB`, `1.5GiB` or `1000000`; ValueError names the expected form."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise ValueError(f"expected a size such as 500M or 2G, got {text!r}")
    number, unit, binary = found.groups()
    base = 1024 if binary else 1000
    return int(float(number) * base ** _POWERS[(unit or "").lower()])


def parse_duration(text: str) -> float:
    """Seconds of `30m`, `12h`, `1h30m`, `90s` or `90`; ValueError names the expected form."""
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(stripped)
    if not parts or _DURATION_PART.sub("", stripped).strip():
        raise ValueError(f"expected a duration such as 30m, 12h or 1h30m, got {text!r}")
    return sum(float(n) * _DURATION_FACTORS[unit.lower()] for n, unit in parts)


def human_duration(seconds: float) -> str:
    """`seconds` as `1h30m`, `45m`, `12s`: the form `parse_duration` reads."""
    seconds = round(max(seconds, 0.0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"
