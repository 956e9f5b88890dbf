"""Counts and sizes as every message prints them: one way to say "1 page" and "34.9 MB".

Sizes are decimal (1 kB = 1,000 bytes, 1 MB = 1,000,000 bytes), as disks and networks count
them, so the progress line, the crawl summary and the export all give the same figure.
"""

from __future__ import annotations

__all__ = ["plural", "size"]

_UNITS = ("kB", "MB", "GB", "TB")


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
