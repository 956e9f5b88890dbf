"""What a crawl's queue holds, for people: per host, and the URL patterns that dominate it.

A trap fills the queue with one shape of URL (`/calendar/2031/7/`, `?sessionid=...`): shown
as a template with its count and the `archiver control ARCHIVE exclude` line that would drop
it, a crawl running into one is seen before it has spent hours there.  Templates come from
the URLs alone: digit runs become `{n}` (`{year}` and `{month}` where they look like dates),
long opaque tokens `{id}`, query values `{value}`.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .units import plural
from .urls import site_of

SAMPLE = 50_000
"""Queued URLs read at most: `status` answers within a second on any queue."""
LOG_TAIL = 4 << 20
"""Bytes of the crawl log's end read for the trap detector's findings."""
DOMINANT_COUNT, DOMINANT_SHARE = 10, 0.1
"""A pattern is shown when it has at least this many of its host's queued URLs, and this share."""
_DIGITS = re.compile(r"\d+")
_OPAQUE = re.compile(r"[0-9A-Za-z_-]{16,}")
_REPEATS = re.compile(r"repeats \d+ times")


@dataclass(frozen=True, slots=True)
class Pattern:
    template: str
    count: int
    regex: str


@dataclass
class HostQueue:
    host: str
    queued: int
    patterns: list[Pattern] = field(default_factory=list)


@dataclass
class QueueView:
    read: int
    """Queued URLs read (at most `SAMPLE`, from the head of the queue)."""
    hosts: list[HostQueue]
    total_hosts: int
    traps: list[tuple[str, int]] = field(default_factory=list)
    """What the trap detector refused lately (the crawl log's end), by rule, most first."""


def _segment(segment: str, previous: str) -> tuple[str, str]:
    """(template, regex) of one path segment."""
    if segment.isdigit():
        number = int(segment)
        if len(segment) == 4 and 1900 <= number <= 2100:
            return "{year}", r"\d{4}"
        if previous == "{year}" and 1 <= number <= 12 and len(segment) <= 2:
            return "{month}", r"\d{1,2}"
        return "{n}", r"\d+"
    if _OPAQUE.fullmatch(segment) and any(c.isdigit() for c in segment):
        return "{id}", r"[^/?#]+"
    if any(c.isdigit() for c in segment):
        literal = _DIGITS.split(segment)
        return "{n}".join(literal), r"\d+".join(re.escape(part) for part in literal)
    return segment, re.escape(segment)


def template(url: str) -> tuple[str, str]:
    """The template of `url`'s path and query, and a regular expression matching its URLs."""
    parts = urlsplit(url)
    shapes, patterns, previous = [], [], ""
    for segment in parts.path.split("/"):
        shape, pattern = _segment(segment, previous)
        shapes.append(shape)
        patterns.append(pattern)
        previous = shape
    text, regex = "/".join(shapes) or "/", "/".join(patterns) or "/"
    if parts.query:
        names = sorted({pair.split("=", 1)[0] for pair in parts.query.split("&") if pair})
        text += "?" + "&".join(f"{name}={{value}}" for name in names)
        # a parameter's name is what a trap repeats; the values vary
        regex += "".join(f"(?=[^#]*[?&]{re.escape(name)}=)" for name in names) + r"\?"
    return text, regex


def queue_view(urls: Iterable[str], hosts: int = 5, patterns: int = 3) -> QueueView:
    """The `hosts` hosts with most URLs queued, each with its `patterns` largest templates."""
    per_host: collections.Counter[str] = collections.Counter()
    shapes: dict[str, collections.Counter[tuple[str, str]]] = collections.defaultdict(collections.Counter)
    read = 0
    for url in urls:
        host = site_of(url)
        per_host[host] += 1
        shapes[host][template(url)] += 1
        read += 1
    found = []
    for host, queued in per_host.most_common(hosts):
        top = [
            Pattern(text, n, regex)
            for (text, regex), n in shapes[host].most_common(patterns)
            if n >= DOMINANT_COUNT and n >= DOMINANT_SHARE * queued
        ]
        found.append(HostQueue(host, queued, top))
    return QueueView(read, found, len(per_host))


def trap_findings(log: Path) -> list[tuple[str, int]]:
    """The trap detector's refusals in the last `LOG_TAIL` bytes of the crawl log, by rule."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(handle.seek(0, 2) - LOG_TAIL, 0))
            tail = handle.read(LOG_TAIL)
    except FileNotFoundError:
        return []
    found: collections.Counter[str] = collections.Counter()
    for line in tail.splitlines():
        if b'"skipped"' not in line or (b'"trap:' not in line and b'"budget:' not in line):
            continue
        try:
            reason = json.loads(line).get("reason")
        except (ValueError, AttributeError):
            continue
        if isinstance(reason, str):
            found[_REPEATS.sub("repeats", reason)] += 1
    return found.most_common(5)


def view_lines(view: QueueView, archive: str, queued: int) -> list[str]:
    """The lines `archiver status` prints under the counts."""
    lines = [f"  trap detector: {n:,} refused, {reason}" for reason, n in view.traps]
    if not view.read:
        return lines
    sampled = f" (the first {view.read:,} read)" if view.read < queued else ""
    shown = f", the {len(view.hosts):,} with most to fetch" if len(view.hosts) < view.total_hosts else ""
    lines.append(f"  queue by host{sampled}: {plural(view.total_hosts, 'host')}{shown}")
    for host in view.hosts:
        # queued and in flight alike: the counts above give them apart
        lines.append(f"    {host.host}: {host.queued:,} to fetch")
        for pattern in host.patterns:
            share = pattern.count / host.queued
            lines.append(f"      {pattern.template}  {pattern.count:,} ({share:.0%})")
            if share >= 0.2 and pattern.count >= 20:
                lines.append(f"        to drop them: archiver control {archive} exclude '{pattern.regex}'")
    return lines
