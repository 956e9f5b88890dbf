"""The archives a server shows: their WARC readers, kept fresh while a crawl writes them.

A `WarcArchive` rebuilds its index in `refresh()`, which is not safe to run while
another thread looks something up, so each archive guards its index with a lock and
refreshes at most every `refresh_seconds`.  Reading a record's bytes needs no lock.
Everything here blocks: the views call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import calendar
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from archiver.api import WARC_FOLDER, ArchiveError, UsageError

from ..archive_reader.reader import Capture, StoredResponse, WarcArchive, open_archive
from ..archive_reader.suffixes import STORED_NAMES
from ..markup.snapshot import DOM_PREFIX, SCREENSHOT_PREFIX
from .fuzzy import SEARCH_LIMIT, stands_in

REFRESH_SECONDS = 2.0

log = logging.getLogger("archiver.web")


RENDERED = (DOM_PREFIX, SCREENSHOT_PREFIX)


def site_of(url: str) -> str:
    """The host (with its port, if any) a URL belongs to, as the browse pages group them."""
    try:
        return urlsplit(url).netloc.lower().rsplit("@", 1)[-1] or "-"
    except ValueError:
        return "-"


def type_group(mime: str | None) -> str:
    """A coarse family of a media type, for the browse filter."""
    mime = (mime or "").lower()
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime == "text/css":
        return "css"
    if "javascript" in mime or mime == "application/json":
        return "script"
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("font/") or "font" in mime:
        return "font"
    if mime == "warc/revisit":
        return "revisit"
    return "other"


TYPE_GROUPS = ("html", "css", "script", "image", "font", "other")


@dataclass(frozen=True, slots=True)
class UrlEntry:
    """One URL of a site: its newest capture and how many there are."""

    url: str
    latest: Capture
    count: int


@dataclass(frozen=True, slots=True)
class SiteSummary:
    host: str
    urls: int
    captures: int
    first: str
    last: str


@dataclass
class Catalog:
    """What an archive holds, grouped by site; rebuilt after the index changed."""

    sites: dict[str, SiteSummary]
    urls: dict[str, list[UrlEntry]]
    captures: int
    rendered: dict[str, str] = field(default_factory=dict)
    """Page URL -> the path of its newest rendering by the browser capture (``/rendered/...``):
    its ``urn:dom:``/``urn:screenshot:`` records belong to the page, not to a site of their own."""

    @classmethod
    def build(cls, captures: Iterable[Capture]) -> Catalog:
        by_url: dict[str, list[Capture]] = {}
        newest: dict[tuple[str, str], str] = {}  # (page URL, dom or screenshot) -> timestamp
        total = 0
        for capture in captures:
            total += 1
            if capture.url.startswith(RENDERED):
                kind = "dom" if capture.url.startswith(DOM_PREFIX) else "screenshot"
                key = (capture.url.removeprefix(DOM_PREFIX if kind == "dom" else SCREENSHOT_PREFIX), kind)
                newest[key] = max(newest.get(key, ""), capture.timestamp)
                continue
            if not capture.url.lower().startswith(("http://", "https://")):
                continue  # a tool's own records (wget's metadata://, dns:): no site, nothing to replay
            by_url.setdefault(capture.url, []).append(capture)
        urls: dict[str, list[UrlEntry]] = {}
        for url, found in by_url.items():
            latest = max(found, key=lambda c: c.timestamp)
            urls.setdefault(site_of(url), []).append(UrlEntry(url, latest, len(found)))
        oldest: dict[str, str] = {}
        for url, found in by_url.items():
            host, earliest = site_of(url), min(c.timestamp for c in found)
            oldest[host] = min(oldest.get(host, earliest), earliest)
        sites = {}
        for host, entries in urls.items():
            entries.sort(key=lambda e: e.url)
            sites[host] = SiteSummary(
                host=host,
                urls=len(entries),
                captures=sum(e.count for e in entries),
                first=oldest[host],
                last=max(e.latest.timestamp for e in entries),
            )
        rendered: dict[str, str] = {}
        for (page, kind), when in sorted(newest.items(), key=lambda item: item[0][1] == "dom"):
            rendered[page] = f"/rendered/{kind}/{when}/{page}"  # the DOM's, when there is one, last
        return cls(sites=sites, urls=urls, captures=total, rendered=rendered)


@dataclass
class ArchiveHandle:
    """One archive folder (or WARC file) the server was given."""

    name: str
    path: Path
    refresh_seconds: float = REFRESH_SECONDS
    _reader: WarcArchive | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _refreshed_at: float = field(default=-1e9, repr=False)
    _generation: int = field(default=0, repr=False)
    _catalog: tuple[int, Catalog] | None = field(default=None, repr=False)
    _reported: set[str] = field(default_factory=set, repr=False)

    @property
    def folder(self) -> Path:
        """The archive folder (for a lone WARC file, the folder holding it)."""
        return self.path if self.path.is_dir() else self.path.parent

    def _fresh(self) -> WarcArchive | None:
        """The reader with an index at most `refresh_seconds` old; call with the lock held."""
        if self._reader is None:
            if self.path.is_dir() and not (self.path / WARC_FOLDER).is_dir():
                return None  # a crawl that has not written its first WARC file yet
            self._reader = open_archive(self.path)
        now = time.monotonic()
        if now - self._refreshed_at >= self.refresh_seconds:
            self._reader.refresh()
            self._refreshed_at = now
            self._generation += 1
            for problem in self._reader.problems:
                if problem not in self._reported:
                    self._reported.add(problem)
                    log.warning("%s", problem)
        return self._reader

    def reader(self) -> WarcArchive | None:
        """The archive's reader, its index fresh (None before the first WARC file)."""
        with self._lock:
            return self._fresh()

    def captures(self, url: str) -> list[Capture]:
        with self._lock:
            reader = self._fresh()
            return reader.captures(url) if reader is not None else []

    def stand_ins(self, url: str) -> list[Capture]:
        """Captures of `url`'s path with another query that pywb's fuzzy match accepts for it."""
        with self._lock:
            reader = self._fresh()
            found = reader.captures_of_query_variants(url, SEARCH_LIMIT) if reader is not None else []
        return [capture for capture in found if stands_in(url, capture)]

    def read(self, capture: Capture) -> StoredResponse:
        if capture.is_revisit:  # resolving a revisit consults the index
            with self._lock:
                reader = self._fresh()
                assert reader is not None
                return reader.read(capture)
        reader = self._reader
        if reader is None:
            raise ArchiveError(f"{self.name}: no WARC files")
        return reader.read(capture)

    def catalog(self) -> Catalog:
        with self._lock:
            reader = self._fresh()
            if reader is None:
                return Catalog({}, {}, 0)
            if self._catalog is None or self._catalog[0] != self._generation:
                self._catalog = (self._generation, Catalog.build(reader.iter_captures()))
            return self._catalog[1]


@dataclass(frozen=True, slots=True)
class Found:
    """A capture and the archive holding it."""

    archive: ArchiveHandle
    capture: Capture
    fuzzy: bool = False
    """The URL asked for is not archived: this is a capture of its path with another query."""


class Library:
    """Every archive the server shows, looked up together."""

    def __init__(self, handles: Sequence[ArchiveHandle]) -> None:
        self.handles = list(handles)
        self.by_name = {h.name: h for h in self.handles}

    @classmethod
    def open(cls, paths: Sequence[Path | str], refresh_seconds: float = REFRESH_SECONDS) -> Library:
        """Check each path and give each archive a short unique name (its folder's name)."""
        if not paths:
            raise UsageError("give at least one archive folder")
        handles: list[ArchiveHandle] = []
        names: set[str] = set()
        for raw in paths:
            path = Path(raw)
            if not path.exists():
                raise UsageError(f"no archive at {path}")
            if path.is_file() and not path.name.endswith(STORED_NAMES):
                raise UsageError(f"{path} is neither an archive folder nor a WARC file")
            base = path.resolve().name or "archive"
            name, n = base, 1
            while name in names:
                n += 1
                name = f"{base}-{n}"
            names.add(name)
            handles.append(ArchiveHandle(name=name, path=path, refresh_seconds=refresh_seconds))
        return cls(handles)

    def history(self, url: str) -> list[Found]:
        """Every capture of `url` in every archive, oldest first."""
        found = [Found(h, c) for h in self.handles for c in h.captures(url)]
        found.sort(key=lambda f: (f.capture.timestamp, f.archive.name))
        return found

    def is_archived(self, url: str) -> bool:
        return any(h.captures(url) for h in self.handles)

    def renderings(self, url: str) -> list[Found]:
        """The browser capture's records of `url` (rendered DOMs, screenshots), oldest first."""
        found = [Found(h, c) for prefix in RENDERED for h in self.handles for c in h.captures(prefix + url)]
        found.sort(key=lambda f: (f.capture.timestamp, f.archive.name, f.capture.url))
        return found

    def nearest(self, url: str, timestamp: str, *, fuzzy: bool = True) -> Found | None:
        """The capture of `url` nearest to `timestamp` (later wins a tie).

        Captures of exactly this URL are preferred to those that only share its SURT
        key (``http:`` and ``https:``, ``www.``), so that a redirect from one to the
        other is not answered with itself.
        """
        found = self.history(url) or (self._fuzzy(url) if fuzzy else [])
        if not found:
            return None
        exact = [f for f in found if f.capture.url == url]
        pool = exact or found
        wanted = seconds(timestamp)
        return min(reversed(pool), key=lambda f: abs(seconds(f.capture.timestamp) - wanted))

    def _fuzzy(self, url: str) -> list[Found]:
        """Captures that may replay `url`, which is not archived (pywb's fuzzy match), oldest first."""
        found = [Found(h, c, fuzzy=True) for h in self.handles for c in h.stand_ins(url)]
        found.sort(key=lambda f: (f.capture.timestamp, f.archive.name))
        return found


def seconds(timestamp: str) -> int:
    """A 1-14 digit timestamp as Unix seconds, missing digits taken as the earliest moment."""
    digits = (timestamp[:14] + "00000101000000"[len(timestamp[:14]) :])[:14]
    year, month, day = int(digits[0:4]), int(digits[4:6]), int(digits[6:8])
    month = min(max(month, 1), 12)
    clock = int(digits[8:10]), int(digits[10:12]), int(digits[12:14])
    return calendar.timegm((max(year, 1), month, max(day, 1), *clock))
