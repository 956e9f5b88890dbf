"""Links of one exported file -> relative paths of other exported files, or the web.

`FileLinks` is the `LinkMap` the rewriters call for every link of one document;
`MissingLinks` collects the links that could not be made local, with the reason the
archive gives (an error status, a crawl-log skip reason such as "out of scope", or
simply never fetched), for the export report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any
from urllib.parse import urldefrag, urljoin

from w3lib.url import safe_url_string

from archiver.api import CRAWL_LOG_NAME

from .mapping import UNCHANGED, Mapped
from .names import MirrorPath, relative_href
from .plan import Item, Plan, normalize

__all__ = ["FileLinks", "MissingLinks", "crawl_log_reasons"]

_WS = "\t\n\f\r "
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
MAX_REFERRERS = 5


@dataclass
class _Missing:
    kinds: Counter[str] = field(default_factory=Counter)
    referrers: list[str] = field(default_factory=list)
    count: int = 0


class MissingLinks:
    """Links left pointing at the web, by target URL."""

    def __init__(self, plan: Plan, reasons: dict[str, str] | None = None) -> None:
        self.plan = plan
        self.reasons = reasons or {}
        self.targets: dict[str, _Missing] = {}

    def add(self, url: str, kind: str, referrer: str) -> None:
        entry = self.targets.setdefault(url, _Missing())
        entry.count += 1
        entry.kinds[kind] += 1
        if referrer not in entry.referrers and len(entry.referrers) < MAX_REFERRERS:
            entry.referrers.append(referrer)

    def reason(self, url: str) -> str:
        blocked = self.plan.blocked.get(url)
        if blocked is not None:
            return f"archived, but its file could not be written: {blocked}"
        status = self.plan.skipped_status(url)
        if status is not None:
            return f"HTTP {status} when crawled"
        logged = self.reasons.get(url)
        if logged:
            return logged
        return "not archived"

    @property
    def link_count(self) -> int:
        return sum(entry.count for entry in self.targets.values())

    def to_json(self) -> list[dict[str, Any]]:
        ordered = sorted(self.targets.items(), key=lambda pair: (-pair[1].count, pair[0]))
        return [
            {
                "url": url,
                "reason": self.reason(url),
                "kind": entry.kinds.most_common(1)[0][0],
                "links": entry.count,
                "referrers": entry.referrers,
            }
            for url, entry in ordered
        ]

    def by_reason(self) -> Counter[str]:
        return Counter(self.reason(url) for url in self.targets)


def crawl_log_reasons(archive: FsPath) -> dict[str, str]:
    """url -> why the crawl did not archive it, from ``crawl-log.jsonl`` (skips and errors)."""
    path = archive / CRAWL_LOG_NAME
    reasons: dict[str, str] = {}
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        return reasons
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or not isinstance(record.get("url"), str):
                continue
            url = normalize(record["url"])
            if url is None:
                continue
            if record.get("outcome") == "skipped" and record.get("reason"):
                reasons[url] = f"skipped by the crawl: {record['reason']}"
            elif record.get("error"):
                reasons[url] = f"failed when crawled: {record['error']}"
    return reasons


class FileLinks:
    """The `LinkMap` for the document that becomes file `source` (whose URL is `referrer`)."""

    def __init__(
        self,
        plan: Plan,
        source: MirrorPath,
        referrer: str,
        missing: MissingLinks,
        escape_ampersand: bool = False,
    ) -> None:
        self.plan = plan
        self.escape_ampersand = escape_ampersand
        """Write ``&`` in file names as ``%26``: zimcheck reads ``&amp;`` in an href literally."""
        self.source = source
        self.referrer = referrer
        self.missing = missing
        self.found: list[list[str]] = []

    def href_to(self, item: Item) -> str:
        """The relative link from this file to the file of `item`."""
        href = relative_href(self.source, self.plan.paths[item.url])
        return href.replace("&", "%26") if self.escape_ampersand else href

    def add_missing(self, url: str, kind: str) -> None:
        self.missing.add(url, kind, self.referrer)
        self.found.append([url, kind])

    def __call__(self, raw: str, base: str, kind: str) -> Mapped:
        raw = raw.strip(_WS)
        if not raw or raw.startswith("#"):
            return UNCHANGED
        scheme = _SCHEME.match(raw)
        if scheme and scheme.group(1).lower() not in ("http", "https"):
            return UNCHANGED  # mailto:, javascript:, data:, tel:...
        try:
            absolute = urljoin(base, raw)
        except ValueError:
            return UNCHANGED
        url, fragment = urldefrag(absolute)
        key = normalize(url)
        if key is None:
            return UNCHANGED
        item = self.plan.final(key)
        if item is not None:
            href = self.href_to(item)
            return Mapped(href + ("#" + fragment if fragment else ""))
        self.add_missing(key, kind)
        absolute = safe_url_string(absolute)
        return Mapped(
            None if absolute == raw else absolute,
            missing=True,
            target=absolute,
            reason=self.missing.reason(key),
        )
