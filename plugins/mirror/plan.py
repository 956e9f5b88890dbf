"""What the mirror holds: one capture per URL, its file, and how links find it.

The plan is built from the archive's index alone (plus the few redirect and revisit
records whose headers are needed), before any page is rewritten, because rewriting a
page needs to know the file of every URL it links to.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import safe_url_string

from archiver.api import ArchiveError, UsageError, canonical_key, read_history

from ..archive_reader.reader import Capture, WarcArchive
from ..archive_reader.surt import surt
from .names import MirrorPath, allocate, natural_path

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_UNUSABLE_2XX = frozenset({204, 205, 206})
_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REDIRECT_HOPS = 20
REDIRECT_MIME = "text/html"


_NEEDS_QUOTING = re.compile(r"[^\x21-\x7e]|[\"<>\\^`{|}]")


@functools.lru_cache(maxsize=65536)
def normalize(url: str) -> str | None:
    """The URL as the plan keys it: http(s) only, scheme and host lower-case, default
    port and fragment dropped, non-ASCII and spaces percent-encoded; None otherwise.

    Cached: a site's pages link the same few hundred URLs over and over."""
    url = url.strip()
    try:
        parts = urlsplit(safe_url_string(url) if _NEEDS_QUOTING.search(url) else url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            return None
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def usable(capture: Capture) -> bool:
    """A capture worth a file: a success with a body, or a redirect; or a resource
    record (no HTTP status: its block is the file, as a browser-based capture stores it)."""
    status = capture.status
    if status is None:
        return capture.mime is not None and not capture.is_revisit
    return (200 <= status < 300 and status not in _UNUSABLE_2XX) or status in REDIRECT_STATUSES


@dataclass(frozen=True, slots=True)
class Item:
    """One URL of the mirror: the capture chosen for it and what its file is."""

    url: str
    capture: Capture
    mime: str
    status: int
    location: str | None = None
    """For a redirect: the normalized absolute target."""

    @property
    def is_redirect(self) -> bool:
        return self.location is not None


@dataclass
class Plan:
    items: dict[str, Item]
    paths: dict[str, MirrorPath]
    skipped: dict[str, int] = field(default_factory=dict)
    """URLs whose only captures are not usable (404, 500...): url -> latest status."""
    errors: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    """URLs taken out because their file cannot be written: url -> why."""
    _by_canonical: dict[str, str] = field(default_factory=dict, repr=False)
    _by_surt: dict[str, str] = field(default_factory=dict, repr=False)
    _finals: dict[str, Item | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        self._finals.clear()
        self._by_canonical.clear()
        self._by_surt.clear()
        for url in sorted(self.items):
            self._by_canonical.setdefault(canonical_key(url), url)
            self._by_surt.setdefault(surt(url), url)

    def drop(self, reasons: dict[str, str]) -> None:
        """Take URLs out of the mirror (their file cannot be written): links to them stay on the web."""
        for url, why in reasons.items():
            self.items.pop(url, None)
            self.paths.pop(url, None)
            self.blocked[url] = why
        if reasons:
            self._index()

    def find(self, url: str) -> Item | None:
        """The item for a normalized URL: exact, then canonical (query order), then SURT."""
        item = self.items.get(url)
        if item is not None:
            return item
        other = self._by_canonical.get(canonical_key(url)) or self._by_surt.get(surt(url))
        return self.items.get(other) if other else None

    def final(self, url: str) -> Item | None:
        """The item a link to `url` should reach: redirects followed to a page when the
        chain ends in the mirror, else the first redirect's own forwarding page."""
        try:
            return self._finals[url]
        except KeyError:
            found = self._final(url)
            self._finals[url] = found
            return found

    def _final(self, url: str) -> Item | None:
        first = self.find(url)
        item = first
        seen: set[str] = set()
        while item is not None and item.location is not None and len(seen) < MAX_REDIRECT_HOPS:
            seen.add(item.url)
            following = self.find(item.location)
            if following is None or following.url in seen:
                return first
            item = following
        return item if item is not None and not item.is_redirect else first

    def skipped_status(self, url: str) -> int | None:
        return self.skipped.get(url)


def _pick(captures: list[Capture], timestamp: str | None, before: str | None = None) -> Capture | None:
    """The latest usable capture (or the nearest to `timestamp` of those made `before`, when
    given); on a tie, the one written last (captures come in archive order and the sort is
    stable)."""
    chosen = sorted((c for c in captures if usable(c)), key=lambda c: c.timestamp)
    if before is not None:
        chosen = [c for c in chosen if c.timestamp < before]
    if not chosen:
        return None
    if timestamp is None:
        return chosen[-1]
    wanted = _seconds(timestamp)
    return min(reversed(chosen), key=lambda c: abs(_seconds(c.timestamp) - wanted))


_GONE = frozenset({404, 410})


def _gone_since(captures: list[Capture], chosen: Capture | None, before: str | None) -> int | None:
    """The 404 or 410 of a URL whose newest capture (made `before`, when given) says it is gone,
    newer than `chosen`; else None.  A mirror updated after the page was removed drops it,
    as `wget --mirror` would not find it."""
    answered = [c for c in captures if c.status is not None and (before is None or c.timestamp < before)]
    if not answered:
        return None
    newest = max(answered, key=lambda c: c.timestamp)
    if newest.status not in _GONE or (chosen is not None and chosen.timestamp >= newest.timestamp):
        return None
    return newest.status


def _seconds(timestamp: str) -> float:
    digits = (timestamp + "19700101000000"[len(timestamp) :])[:14]
    try:
        return datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return 0.0


def check_timestamp(timestamp: str) -> str:
    """`timestamp` if it is 4 to 14 digits of a date (``2024``, ``20240115``...); else UsageError."""
    digits = (timestamp + "0101000000"[max(len(timestamp) - 4, 0) :])[:14]
    if not (timestamp.isdigit() and 4 <= len(timestamp) <= 14):
        raise UsageError(f"--at wants 4 to 14 digits (YYYYMMDDhhmmss), not {timestamp!r}")
    try:
        datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        raise UsageError(f"--at {timestamp}: not a valid date and time") from None
    return timestamp


def crawls_end(folder: Path, timestamp: str) -> str | None:
    """When the crawl of `timestamp` ended: the 14-digit start of the crawl after it, in the
    archive holding `folder`; None when it is the last (or there is no history).

    The crawl of TIME is the last one started by then, or the first when TIME comes before
    them all.  ``export --at TIME`` shows the site as it was then: a page first captured by a
    later crawl did not exist yet, while the crawl of TIME counts whole (its pages are captured
    over hours, some after TIME).
    """
    archive = folder.parent if folder.name == "warc" else folder
    wanted = (timestamp + "0101000000"[max(len(timestamp) - 4, 0) :])[:14]
    starts = [run.started.astimezone(UTC).strftime("%Y%m%d%H%M%S") for run in read_history(archive)]
    later = [start for start in starts[1:] if start > wanted]
    return later[0] if later else None


def build_plan(archive: WarcArchive, timestamp: str | None = None) -> Plan:
    """Choose a capture per URL (the latest, or the nearest to `timestamp` of those made before
    the crawl after it, `crawls_end`) and its file."""
    before = crawls_end(archive.folder, timestamp) if timestamp is not None else None
    groups: dict[str, list[Capture]] = {}
    for capture in archive.iter_captures():
        url = normalize(capture.url)
        if url is not None:
            groups.setdefault(url, []).append(capture)
    items: dict[str, Item] = {}
    skipped: dict[str, int] = {}
    errors: list[str] = []
    for url, captures in groups.items():
        chosen = _pick(captures, timestamp, before)
        if chosen is None and before is not None and all(c.timestamp >= before for c in captures):
            continue  # first captured after the crawl of `timestamp`: not there yet
        gone = _gone_since(captures, chosen, before)
        if gone is not None:
            skipped[url] = gone  # an update found it 404/410: its file leaves the mirror too
            continue
        if chosen is None:
            statuses = [c.status for c in sorted(captures, key=lambda c: c.timestamp) if c.status]
            if statuses:
                skipped[url] = statuses[-1]
            continue
        try:
            item = _item(archive, url, chosen)
        except ArchiveError as exc:
            errors.append(str(exc))
            continue
        if item is not None:
            items[url] = item
    paths = allocate(
        (url, natural_path(url, REDIRECT_MIME if item.is_redirect else item.mime))
        for url, item in items.items()
    )
    return Plan(items=items, paths=paths, skipped=skipped, errors=errors)


def _item(archive: WarcArchive, url: str, capture: Capture) -> Item | None:
    status = capture.status if capture.status is not None else 200  # a resource record: a file
    mime = (capture.mime or "").lower()
    if status in REDIRECT_STATUSES or capture.is_revisit:
        response = archive.read(capture)
        if status in REDIRECT_STATUSES:
            location = response.header("Location")
            target = normalize(urljoin(capture.url, location.strip())) if location else None
            if target is None or target == url:
                return None
            return Item(url, capture, REDIRECT_MIME, status, target)
        mime = response.content_type
    return Item(url, capture, mime, status)


def roots_of(items: Iterable[Item]) -> list[str]:
    """Start pages when the crawl's roots are unknown: each host's shortest HTML URL."""
    best: dict[str, str] = {}
    for item in items:
        if item.mime not in ("text/html", "application/xhtml+xml") and not item.is_redirect:
            continue
        host = urlsplit(item.url).netloc
        current = best.get(host)
        if current is None or (len(item.url), item.url) < (len(current), current):
            best[host] = item.url
    return [best[host] for host in sorted(best)]
