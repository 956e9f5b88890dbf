"""Records that flow through the hooks: one HTTP exchange (`Page`), one link, one crawl run.

They hold no I/O and no aiohttp objects, so a plugin can be tested by building them by hand.
"""

from __future__ import annotations

import collections
import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import Message
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .stash import Stash

if TYPE_CHECKING:
    from .config import Config
    from .history import Mode

Headers = tuple[tuple[str, str], ...]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
XML_TYPES = frozenset({"application/xml", "text/xml", "application/rss+xml", "application/atom+xml"})


_PLAIN_CONTENT_TYPE = re.compile(r"[\x20-\x7e]*")
_MESSAGE_SYNTAX = frozenset('"\\*<(')


def parse_content_type(raw: str | None) -> tuple[str, dict[str, str]]:
    """(media type lower-cased or '', parameters) of a Content-Type value, as `email` reads it.

    The common value (``text/html; charset=utf-8``) is split by hand: `email.message` costs
    about 17 us a call, and every page needs it.  Anything with quotes, escapes, RFC 2231
    names, comments or non-ASCII goes to `email.message`, the reference behaviour.
    """
    if not raw:
        return "", {}
    if _PLAIN_CONTENT_TYPE.fullmatch(raw) is None or not _MESSAGE_SYNTAX.isdisjoint(raw):
        message = Message()
        message["Content-Type"] = raw
        params = {k.lower(): str(v) for k, v in message.get_params(failobj=[])[1:]}
        mime = message.get_content_type() if "/" in raw.split(";")[0] else ""
        return mime.lower(), params
    head, *rest = raw.split(";")
    mime = head.strip().lower()
    if "/" not in head:
        mime = ""
    elif mime.count("/") != 1:
        mime = "text/plain"
    found: dict[str, str] = {}
    for part in rest:
        name, _, value = part.partition("=")
        found[name.strip().lower()] = value.strip()
    return mime, found


def find_header(headers: Iterable[tuple[str, str]], name: str, default: str | None = None) -> str | None:
    """First header called `name` (case-insensitive) in an ordered header list."""
    lowered = name.lower()
    for key, value in headers:
        if key.lower() == lowered:
            return value
    return default


class LinkKind(enum.StrEnum):
    """Why a URL was linked, which decides how far the crawl follows it."""

    PAGE = "page"
    """A navigational link (`a`, `area`, `meta refresh`, a sitemap entry): followed in scope."""

    REQUISITE = "requisite"
    """Something the page needs to look right offline (image, stylesheet, script, font, media, frame):
    fetched even from another host, but nothing is followed from it."""

    IMPORT = "import"
    """A stylesheet imported by a stylesheet: a requisite whose own imports are followed too."""


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link, already absolute (fragment may remain; the core drops it)."""

    url: str
    kind: LinkKind = LinkKind.PAGE


@dataclass(frozen=True)
class Page:
    """One HTTP exchange exactly as it happened: what was asked, what came back, when, from where.

    `body` is the entity body as it came on the wire, with its Content-Encoding intact and
    chunked transfer coding removed: this is what a WARC stores.  `content` is that body
    with the Content-Encoding undone (capped in size); parse this one.
    """

    url: str
    status: int
    reason: str = ""
    http_version: str = "HTTP/1.1"
    method: str = "GET"
    request_headers: Headers = ()
    headers: Headers = ()
    body: bytes = b""
    content: bytes = b""
    encoding: str | None = None
    """The charset used to decode `content` to text, and how it was chosen, e.g. ('utf-8')."""
    encoding_source: str | None = None
    """Where `encoding` came from: 'header', 'bom', 'meta', 'detected' or 'default'."""
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    elapsed: float = 0.0
    peer: str | None = None
    depth: int = 0
    referrer: str | None = None
    redirect_to: str | None = None
    kind: LinkKind = LinkKind.PAGE
    truncated: str | None = None
    """Why the body is incomplete ('length' when max_body_size cut it, 'time', 'disconnect'),
    else None; the WARC plugin writes it as WARC-Truncated."""
    decode_error: str | None = None
    """Why `content` could not be fully decoded (bomb cap, corrupt gzip), else None."""
    request_target: str | None = None
    """The URL exactly as written on the request line, when it differs from `url`."""
    unchanged: bool = False
    """The archive already holds this URL's content (``crawl --update``): the server answered
    304 to a conditional request (the links then come from the stored capture), or sent the
    payload stored last time.  Plugins that derive data from content (the index) skip it."""

    def header(self, name: str, default: str | None = None) -> str | None:
        """First response header called `name` (case-insensitive)."""
        return find_header(self.headers, name, default)

    def header_values(self, name: str) -> list[str]:
        """Every value of a response header that may repeat (Set-Cookie, Link)."""
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]

    @cached_property
    def _content_type_params(self) -> tuple[str, dict[str, str]]:
        return parse_content_type(self.header("Content-Type"))

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-cased; '' when the header is missing or broken."""
        return self._content_type_params[0]

    @property
    def declared_charset(self) -> str | None:
        """The `charset=` parameter of Content-Type as sent, if any."""
        return self._content_type_params[1].get("charset")

    @property
    def is_redirect(self) -> bool:
        return self.redirect_to is not None

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @cached_property
    def text(self) -> str:
        """`content` decoded with `encoding`; undecodable bytes become U+FFFD, never an error."""
        return self.content.decode(self.encoding or "utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Counts:
    """A frontier's totals, for progress and `archiver status`."""

    queued: int = 0
    in_flight: int = 0
    done: int = 0
    failed: int = 0
    seen: int = 0
    fetching: int = 0
    """Of `in_flight`, the URLs a worker is fetching now; the others are taken from the queue
    (a persistent frontier leases a batch at once) and wait in memory for a worker."""
    this_process: int | None = None
    """For a frontier shared by several processes, the URLs this process finished; the other
    totals are then the whole crawl's.  None for a frontier of one process."""

    @property
    def finished(self) -> bool:
        """A crawl was seeded and nothing is left: no URL queued, none in flight."""
        return self.seen > 0 and self.queued == 0 and self.in_flight == 0


class LogWriter(Protocol):
    def write(self, record: dict[str, Any]) -> None: ...


class SharedIdentity(Protocol):
    """The crawl's cookie jar as the browser plugin shares it (`identity.CrawlIdentity`)."""

    def browser_cookies(self) -> list[dict[str, Any]]:
        """Every cookie of the jar, as Playwright's `add_cookies` takes them."""
        ...

    def take_browser_cookies(self, cookies: Iterable[Mapping[str, Any]]) -> None:
        """Cookies a page holds (Playwright's `BrowserContext.cookies()`) back into the jar."""
        ...


@dataclass
class Crawl:
    """One run of the crawler, as plugins see it: its configuration, clock and counters.

    Deliberately not the crawler itself: plugins get no queue and no session.
    `stats` keys are stable strings ('pages', 'bytes', 'status_2xx', ...); a plugin
    may add its own under its name ('warc.records').
    """

    config: Config
    archive: Path
    roots: tuple[str, ...]
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    finishing: str = ""
    """What the run is doing after its last page, if that takes long ('indexing 1,234 pages...'):
    a `crawl_finished` hook sets it and the progress bar shows it."""
    stash: Stash = field(default_factory=Stash)
    """Plugins' per-run objects, each under a typed key of its own (`archiver.api.StashKey`)."""
    stats: collections.Counter[str] = field(default_factory=collections.Counter)
    resumed: bool = False
    interrupted: bool = False
    limit: str | None = None
    paused: bool = False
    """Paused by `archiver control pause`: fetches in flight finish, nothing new starts."""
    """The limit (max_bytes, max_time, min_free_disk) that stopped the run, in words, if one did."""
    number: int = 0
    """Which crawl of the archive this is (1 for the first; a resume keeps its number)."""
    mode: Mode = "crawl"
    signal: int | None = None
    """The signal (SIGINT, SIGTERM) that interrupted the run, if one did."""
    complete: bool = False
    """Set when the run ends: nothing was left to fetch (no URL queued, none in flight)."""
    seed_error: str | None = None
    """Why the first root that failed could not be fetched."""
    pending_at_end: dict[str, int] = field(default_factory=dict)
    """Plugins' own queues (``NAME.pending`` stats) still waiting when the last page was fetched.

    A plugin whose figure was stale then sets its own here as its ``crawl_finished`` begins:
    the progress display and the summary count its catch-up from it."""
    left_to_do: list[str] = field(default_factory=list)
    """What plugins left undone when a run that had fetched everything was interrupted, each
    with the command that finishes it: running the crawl again would find nothing to do."""
    after_crawl: dict[str, Any] | None = None
    """The stage after the last page, when plugins had to catch up: seconds, pages per plugin."""
    crawl_log: LogWriter | None = None
    """The crawl log, where a plugin may add lines of its own (the browser's renderings)."""
    identity: SharedIdentity | None = None
    """The crawl's cookie jar, for a plugin that makes requests of its own (the browser's pages)."""
