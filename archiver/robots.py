"""robots.txt: fetched once per origin (scheme, host, port), parsed with protego, cached.

What a response means follows what the big search engines document:

* 2xx: the rules apply; only the first `ROBOTS_MAX_SIZE` bytes are read and parsed.
* 4xx (except 429): there are no rules; everything is allowed.
* 429, 5xx, no answer or a cut body: the server is in trouble, so the whole origin is
  held and robots.txt is fetched again after a backoff (Retry-After when given), up to
  `max_tries` times; after that the origin's URLs are skipped with that reason.
* redirects are followed up to `ROBOTS_MAX_REDIRECTS` hops, then treated as missing.

Every robots.txt response goes through `page_fetched`, so it is archived like any other
exchange (wget does the same), and each outcome is appended to `robots.jsonl` in the
archive so that `archiver why` can later name the line that decided.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from protego import Protego

from .config import Config
from .errors import RETRYABLE_KINDS, FetchError
from .layout import ROBOTS_LOG_NAME
from .model import Page
from .politeness import HostLimiter, retry_after_seconds
from .robots_lines import conforming_lines
from .urls import clean_url, rule_readings

log = logging.getLogger(__name__)

ROBOTS_MAX_SIZE = 500 * 1024
"""Bytes of robots.txt read and parsed (Google's limit: the rest is ignored)."""

ROBOTS_MAX_REDIRECTS = 5

FetchOne = Callable[[str], Awaitable[Page]]
OnFetched = Callable[[Page], Awaitable[None]]
OnOutcome = Callable[[dict[str, Any]], None]

ALLOW_ALL = "allow-all"
RULES = "rules"
UNAVAILABLE = "unavailable"


def origin_of(url: str) -> str:
    """`scheme://host[:port]`: the unit robots.txt applies to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port is None or port == default else f"{scheme}://{host}:{port}"


def agent_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: 'archiver' of 'archiver/1.0 (+...)'."""
    first = user_agent.strip().split(None, 1)[0] if user_agent.strip() else "archiver"
    return first.split("/", 1)[0].lower() or "archiver"


def deciding_rule(parser: Protego, url: str, agent: str) -> str | None:
    """The `Allow:`/`Disallow:` line that decides `url`, for explanations.

    protego answers yes or no only; the rule is found by walking its parsed rule set in
    the order it matches.  That is private API, so any surprise yields None and the
    caller falls back to a plain "disallowed".
    """
    try:
        from protego._utils import _quote_path

        rule_set = parser._get_matching_rule_set(agent)
        if rule_set is None:
            return None
        path = _quote_path(url)
        for rule in rule_set._rules:
            if rule.value.match(path):
                field = "Allow" if rule.field == "allow" else "Disallow"
                return f"{field}: {rule.value._pattern} (User-agent: {rule_set.user_agent})"
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    return None


@dataclass(frozen=True, slots=True)
class RobotsVerdict:
    allowed: bool
    reason: str | None = None
    unreachable: bool = False
    """The host gave no answer at all: the URL failed, it was not refused."""


@dataclass
class RobotsEntry:
    """What is known of one origin's robots.txt."""

    origin: str
    state: str
    note: str
    parser: Protego | None = None
    failures: int = 0
    retry_at: float = 0.0
    crawl_delay: float | None = None
    unreachable: bool = False
    """No HTTP answer (refused, DNS, timeout): the host itself is down, not its robots.txt."""
    lasting: bool = False
    """The failure is one every try would meet (a refused certificate): said as it is."""

    def verdict(self, url: str, agent: str, max_failures: int) -> RobotsVerdict:
        if self.state == UNAVAILABLE:
            if self.failures >= max_failures:
                if self.unreachable:
                    said = self.note if self.lasting else f"host unreachable: {self.note}"
                    return RobotsVerdict(False, said, unreachable=True)
                return RobotsVerdict(False, f"robots.txt unavailable, host skipped: {self.note}")
            return RobotsVerdict(False, f"robots.txt unavailable for now: {self.note}")
        if self.state == ALLOW_ALL or self.parser is None:
            return RobotsVerdict(True)
        for reading in rule_readings(url):
            if not self.parser.can_fetch(reading, agent):
                rule = deciding_rule(self.parser, reading, agent)
                return RobotsVerdict(False, f"robots.txt {rule}" if rule else "robots.txt disallows it")
        return RobotsVerdict(True)


def parse_robots(body: bytes) -> Protego:
    return Protego.parse(conforming_lines(robots_body(body).decode("utf-8", errors="replace")))


def robots_body(body: bytes, cut: bool = False) -> bytes:
    """What of a robots.txt body is parsed: the first `ROBOTS_MAX_SIZE` bytes, and of a last
    line that the cap (or the end of a body cut short, `cut`) falls in the middle of, only
    a Disallow: ``Allow: /p`` of ``Allow: /public`` would allow what the file disallows,
    while ``Disallow: /p`` of ``Disallow: /public`` refuses more than it, never less."""
    if len(body) > ROBOTS_MAX_SIZE:
        cut = body[ROBOTS_MAX_SIZE : ROBOTS_MAX_SIZE + 1] not in (b"\r", b"\n")
        body = body[:ROBOTS_MAX_SIZE]
    if cut:
        whole = max(body.rfind(b"\n"), body.rfind(b"\r")) + 1
        if not body[whole:].lstrip().lower().startswith(b"disallow"):
            body = body[:whole]
    return body


def entry_from_body(origin: str, status: int, body: bytes, agent: str) -> RobotsEntry:
    """Rules of a 2xx robots.txt body (used by the crawl and by `archiver why`)."""
    parser = parse_robots(body)
    delay = parser.crawl_delay(agent)
    rate = parser.request_rate(agent)
    if rate is not None and rate.requests > 0:
        delay = max(delay or 0.0, rate.seconds / rate.requests)
    return RobotsEntry(origin, RULES, f"HTTP {status}", parser=parser, crawl_delay=delay)


class RobotsCache:
    """The robots.txt of every origin the crawl touches, fetched on first need."""

    def __init__(
        self,
        config: Config,
        limiter: HostLimiter,
        fetch_one: FetchOne,
        on_fetched: OnFetched,
        archive: Path | None = None,
        on_outcome: OnOutcome | None = None,
    ) -> None:
        self.config = config
        self.agent = agent_token(config.user_agent)
        self.limiter = limiter
        self.fetch_one = fetch_one
        self.on_fetched = on_fetched
        self.on_outcome = on_outcome
        self.max_failures = config.max_tries
        self.entries: dict[str, RobotsEntry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._kept: dict[str, tuple[int, bytes]] = {}
        """The last answer fetched per origin, until it is handed to the other processes."""
        self._file: IO[str] | None = None
        if archive is not None:
            self._file = (archive / ROBOTS_LOG_NAME).open("a", encoding="utf-8")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    async def check(self, url: str) -> RobotsVerdict:
        """May `url` be fetched?  Waits while its origin's robots.txt is being (re)fetched."""
        origin = origin_of(url)
        while True:
            entry = self.entries.get(origin)
            if entry is None or self._due(entry):
                lock = self._locks.setdefault(origin, asyncio.Lock())
                async with lock:
                    entry = self.entries.get(origin)
                    if entry is None or self._due(entry):
                        entry = await self._load(origin, entry)
                        self.entries[origin] = entry
            if entry.state == UNAVAILABLE and entry.failures < self.max_failures:
                await asyncio.sleep(max(entry.retry_at - time.monotonic(), 0.0))
                continue
            return entry.verdict(url, self.agent, self.max_failures)

    async def prepare(self, url: str) -> tuple[bool, bool]:
        """Fetch the robots.txt of `url`'s origin if it is due, without waiting for a retry.

        Returns (fetched now, settled): a scheduling crawler gives the URL back to the
        frontier rather than hold it while the host's gap (after this fetch) or its pause
        (robots.txt unavailable for now) runs.
        """
        origin = origin_of(url)
        entry = self.entries.get(origin)
        fetched = False
        if entry is None or self._due(entry):
            async with self._locks.setdefault(origin, asyncio.Lock()):
                entry = self.entries.get(origin)
                if entry is None or self._due(entry):
                    entry = self.entries[origin] = await self._load(origin, entry)
                    fetched = True
        return fetched, not (entry.state == UNAVAILABLE and entry.failures < self.max_failures)

    def _due(self, entry: RobotsEntry) -> bool:
        return (
            entry.state == UNAVAILABLE
            and entry.failures < self.max_failures
            and time.monotonic() >= entry.retry_at
        )

    async def _load(self, origin: str, previous: RobotsEntry | None) -> RobotsEntry:
        """The origin's robots.txt, fetched here, or as another process of a shared crawl fetched it."""
        shared = self.limiter.shared
        if shared is None:
            return await self._fetch(origin, previous)
        told = await shared.robots_of(origin)
        if told is not None:
            return self._told(origin, *told)
        entry = None
        try:
            entry = await self._fetch(origin, previous)
        finally:
            kept = self._kept.pop(origin, None)
            if entry is not None and entry.state != UNAVAILABLE and kept is not None:
                await shared.robots_fetched(origin, *kept)
            else:
                await shared.robots_failed(origin)
        return entry

    def _told(self, origin: str, status: int, body: bytes) -> RobotsEntry:
        """The entry of a robots.txt another process of the crawl fetched (and archived)."""
        url = f"{origin}/robots.txt"
        if not 200 <= status < 300:
            note = f"HTTP {status}: no rules, everything allowed (fetched by another process)"
            return self._settle(ALLOW_ALL, origin, url, None, note)
        entry = entry_from_body(origin, status, body, self.agent)
        entry.note += " (fetched by another process)"
        self._apply_delay(entry)
        self._record(url, None, entry)
        return entry

    async def _fetch(self, origin: str, previous: RobotsEntry | None) -> RobotsEntry:
        url = f"{origin}/robots.txt"
        failures = previous.failures if previous is not None else 0
        page: Page | None = None
        for _hop in range(ROBOTS_MAX_REDIRECTS + 1):
            try:
                async with self.limiter.slot(url):
                    page = await self.fetch_one(url)
            except FetchError as exc:
                note = f"{url}: {exc.message}"
                if exc.kind not in RETRYABLE_KINDS:  # a refused certificate: the same on every try
                    return self._unavailable(
                        origin, self.max_failures - 1, exc.message, None, unreachable=True, final=True
                    )
                return self._unavailable(origin, failures, note, None, unreachable=True)
            await self.on_fetched(page)
            if not page.is_redirect:
                break
            target = clean_url(page.redirect_to or "")
            if target is None:
                return self._settle(ALLOW_ALL, origin, url, page, "redirect to a non-http(s) URL: no rules")
            url = target
        else:
            note = f"more than {ROBOTS_MAX_REDIRECTS} redirects: treated as missing, no rules"
            return self._settle(ALLOW_ALL, origin, url, page, note)
        assert page is not None
        status = page.status
        self._kept[origin] = (status, b"")
        if 200 <= status < 300:
            if page.truncated in ("time", "disconnect"):
                reason = f"body cut ({page.truncated})"
                return self._unavailable(origin, failures, f"{url}: {reason}", page)
            if page.decode_error:
                note = f"HTTP {status}, unreadable ({page.decode_error}): no rules"
                return self._settle(ALLOW_ALL, origin, url, page, note)
            body = robots_body(page.content, cut=page.truncated == "length")
            self._kept[origin] = (status, body)
            entry = entry_from_body(origin, status, body, self.agent)
            if page.truncated == "length":
                entry.note += f", only the first {ROBOTS_MAX_SIZE} bytes used"
            self._apply_delay(entry)
            self._record(url, page, entry)
            return entry
        if 400 <= status < 500 and status != 429:
            return self._settle(ALLOW_ALL, origin, url, page, f"HTTP {status}: no rules, everything allowed")
        return self._unavailable(origin, failures, f"{url}: HTTP {status}", page)

    def _settle(self, state: str, origin: str, url: str, page: Page | None, note: str) -> RobotsEntry:
        entry = RobotsEntry(origin, state, note)
        self._record(url, page, entry)
        return entry

    def _unavailable(
        self,
        origin: str,
        failures: int,
        note: str,
        page: Page | None,
        *,
        unreachable: bool = False,
        final: bool = False,
    ) -> RobotsEntry:
        """The origin's robots.txt unavailable after one more failure; `final` when no other
        try is worth making."""
        failures += 1
        wait = self.config.retry_backoff * 2 ** (failures - 1)
        if page is not None:
            told = retry_after_seconds(page.header("Retry-After"))
            if told is not None:
                wait = told
        wait = min(wait, self.config.retry_after_max)
        tries = f"{failures} of {self.max_failures} tries"
        entry = RobotsEntry(
            origin,
            UNAVAILABLE,
            note if final else f"{note} ({tries})",
            failures=failures,
            retry_at=time.monotonic() + wait,
            unreachable=unreachable,
            lasting=final,
        )
        log.info("robots.txt of %s unavailable (%s); next try in %.1f s", origin, note, wait)
        if failures < self.max_failures:
            self.limiter.pause(origin + "/", wait)  # the host is held until robots.txt is tried again
        self._record(f"{origin}/robots.txt", page, entry)
        return entry

    def _apply_delay(self, entry: RobotsEntry) -> None:
        if entry.crawl_delay is None:
            return
        delay = min(entry.crawl_delay, self.config.retry_after_max)
        if self.limiter.set_crawl_delay(entry.origin + "/", delay):
            entry.note += f", Crawl-delay {delay:g} s"
        else:
            entry.note += f", Crawl-delay {entry.crawl_delay:g} s not used (delay set by the user)"

    def _record(self, url: str, page: Page | None, entry: RobotsEntry) -> None:
        status = page.status if page is not None else None
        if self.on_outcome is not None:
            reason = f"robots.txt {entry.state}: {entry.note}"
            self.on_outcome({"url": url, "outcome": "robots", "status": status, "reason": reason})
        if self._file is None:
            return
        data: dict[str, Any] = {
            "origin": entry.origin,
            "url": url,
            "status": status,
            "state": entry.state,
            "note": entry.note,
            "fetched_at": datetime.now(UTC).isoformat(),
        }
        if entry.state == RULES and page is not None:
            body = robots_body(page.content, cut=page.truncated == "length")
            data["body"] = body.decode("utf-8", errors="replace")
        self._file.write(json.dumps(data, ensure_ascii=False) + "\n")
        self._file.flush()


def saved_robots(archive: Path, agent: str) -> dict[str, RobotsEntry]:
    """The last robots.txt outcome per origin recorded in `archive` (for `archiver why`)."""
    path = archive / ROBOTS_LOG_NAME
    entries: dict[str, RobotsEntry] = {}
    if not path.is_file():
        return entries
    # a crawl killed mid-write leaves a torn line, maybe in the middle of a character
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(data, dict):
                continue
            origin = data.get("origin", "")
            if data.get("state") == RULES:
                entry = entry_from_body(
                    origin, data.get("status") or 200, data.get("body", "").encode(), agent
                )
                entry.note = data.get("note", entry.note)
            else:
                entry = RobotsEntry(origin, data.get("state", ALLOW_ALL), data.get("note", ""))
                if entry.state == UNAVAILABLE:
                    entry.failures = 1 << 30
            entries[origin] = entry
    return entries
