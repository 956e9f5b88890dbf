"""Crawler traps: URL spaces a server can make endless, stopped by counting, not by guessing.

Three rules, each a setting with a safe default (0 turns one off):

* a path segment repeated more than `max_repeated_segments` times (`/a/b/a/b/a/b/a/`,
  the mark of relative links resolved against a URL the server accepts for anything);
* more than `max_query_variants` distinct query strings on one path (calendars,
  session IDs, sort orders);
* more than `max_pages_per_host` URLs queued for one host (the budget that ends
  whatever the first two rules miss, such as `/trap/1`, `/trap/2`, ...).

Memory stays bounded: per path a count, and per host a count; the distinct query
strings are remembered only as 8-byte hashes and only up to the limit.
"""

from __future__ import annotations

import collections
import hashlib
from urllib.parse import urlsplit

from .config import Config
from .urls import site_of


def repeated_segment(path: str, limit: int) -> tuple[str, int] | None:
    """The most repeated segment of `path` and its count, when that count passes `limit`."""
    if limit <= 0:
        return None
    segments = [s for s in path.split("/") if s]
    if len(segments) <= limit:
        return None
    segment, count = collections.Counter(segments).most_common(1)[0]
    return (segment, count) if count > limit else None


def _query_hash(query: str) -> bytes:
    return hashlib.blake2b(query.encode("utf-8", "surrogatepass"), digest_size=8).digest()


class TrapDetector:
    """Says when a URL looks like the next step into a trap; fed with every URL queued."""

    def __init__(self, config: Config) -> None:
        self.max_segments = config.max_repeated_segments
        self.max_variants = config.max_query_variants
        self.max_per_host = config.max_pages_per_host
        self._variants: dict[str, set[bytes]] = {}
        self._full_paths: set[str] = set()
        self._per_host: collections.Counter[str] = collections.Counter()

    def refusal(self, url: str) -> str | None:
        """Why `url` must not be queued, or None; does not count it (see `admitted`)."""
        parts = urlsplit(url)
        found = repeated_segment(parts.path, self.max_segments)
        if found is not None:
            segment, count = found
            return (
                f"trap: path segment {segment!r} repeats {count} times"
                f" (max_repeated_segments = {self.max_segments})"
            )
        if self.max_variants and parts.query:
            path_key = self._path_key(url, parts.path)
            if path_key in self._full_paths and _query_hash(parts.query) not in self._variants.get(
                path_key, ()
            ):
                return (
                    f"trap: more than {self.max_variants} query variants of {path_key}"
                    f" (max_query_variants = {self.max_variants})"
                )
        if self.max_per_host:
            site = site_of(url)
            if self._per_host[site] >= self.max_per_host:
                return f"budget: host {site} reached max_pages_per_host = {self.max_per_host}"
        return None

    def admitted(self, url: str) -> None:
        """Count `url`, which was new and is now queued."""
        parts = urlsplit(url)
        if self.max_per_host:
            self._per_host[site_of(url)] += 1
        if self.max_variants and parts.query:
            path_key = self._path_key(url, parts.path)
            if path_key in self._full_paths:
                return
            seen = self._variants.setdefault(path_key, set())
            seen.add(_query_hash(parts.query))
            if len(seen) >= self.max_variants:
                self._full_paths.add(path_key)

    @staticmethod
    def _path_key(url: str, path: str) -> str:
        return f"{site_of(url)}{path or '/'}"
