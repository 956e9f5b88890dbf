"""The per-URL crawl log (`crawl-log.jsonl`) and the end-of-crawl report (`report.json`).

One JSON object per finished or skipped URL, appended as it happens so `tail -f` follows
a running crawl; the report is derived from the crawl's counters at the end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from .layout import CRAWL_LOG_NAME, REPORT_NAME
from .model import Crawl


@dataclass(slots=True)
class UrlRecord:
    """What happened to one URL (heir of the 500 Lines crawler's FetchStatistic)."""

    url: str
    status: int | None
    next_url: str | None
    content_type: str | None
    encoding: str | None
    num_urls: int
    num_new_urls: int
    tries: int
    error: str | None
    depth: int
    bytes: int
    elapsed: float
    kind: str = "page"
    truncated: str | None = None
    outcome: str = "fetched"
    reason: str | None = None


_FIELDS = tuple(field.name for field in fields(UrlRecord))
# One encoder for every line: `json.dumps` with options builds a new one per call, and
# `asdict` deep-copies; a record holds only flat values, so neither is needed.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


class CrawlLog:
    """Appends records to the archive's log, each handed to the OS as it is written.

    A killed process (SIGKILL, OOM) then loses no line that was written: the line of a page
    is written after its WARC records and before its URL is marked done, and a resume logs
    the pages it finds archived but not done (see `Crawler._reconcile`).
    """

    def __init__(self, archive: Path) -> None:
        self.path = archive / CRAWL_LOG_NAME
        self._file: IO[str] | None = None

    def open(self) -> None:
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, record: UrlRecord | dict[str, Any]) -> None:
        if self._file is None:
            return
        data = {name: getattr(record, name) for name in _FIELDS} if isinstance(record, UrlRecord) else record
        self._file.write(_ENCODER.encode(data) + "\n")
        self._file.flush()

    def skipped(self, url: str, reason: str, referrer: str | None, depth: int) -> None:
        self.write({"url": url, "outcome": "skipped", "reason": reason, "referrer": referrer, "depth": depth})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def logged_urls(path: Path, urls: set[str]) -> set[str]:
    """Which of `urls` already have a line in the crawl log at `path`.

    Every line starts with its URL (``{"url": ...``), so only that string is decoded.
    """
    found: set[str] = set()
    if not urls or not path.is_file():
        return found
    decoder = json.JSONDecoder()
    start = len('{"url": ')
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                url, _ = decoder.raw_decode(line, start)
            except ValueError:
                continue
            if url in urls:
                found.add(url)
    return found


def status_class(record: dict[str, Any]) -> str | None:
    """The class (``2xx``...) a log line counts toward, as `by_status_class` of the report counts
    them: fetched pages only (robots.txt fetches and skipped URLs are not pages)."""
    status = record.get("status")
    if record.get("outcome", "fetched") not in ("fetched", "not_modified") or not isinstance(status, int):
        return None
    return f"{status // 100}xx"


def build_report(crawl: Crawl) -> dict[str, Any]:
    """Totals of a crawl, as written to report.json and printed with --json."""
    stats = crawl.stats
    finished = crawl.finished_at or crawl.started_at
    wall = max((finished - crawl.started_at).total_seconds(), 1e-9)
    by_status = {key[len("status_") :]: n for key, n in sorted(stats.items()) if key.startswith("status_")}
    errors = {key[len("error_") :]: n for key, n in sorted(stats.items()) if key.startswith("error_")}
    skipped = {key[len("skipped_") :]: n for key, n in sorted(stats.items()) if key.startswith("skipped_")}
    plugins = {key: n for key, n in sorted(stats.items()) if "." in key}
    return {
        "archive": str(crawl.archive),
        "roots": list(crawl.roots),
        "started_at": crawl.started_at.isoformat(),
        "finished_at": finished.isoformat(),
        "complete": not crawl.interrupted and crawl.complete,
        "interrupted": crawl.interrupted,
        "limit_reached": crawl.limit,
        "resumed": crawl.resumed,
        "pages": stats["pages"],
        "failed": stats["failed"],
        "bytes": stats["bytes"],
        "redirects": stats["redirects"],
        "retries": stats["retries"],
        **({"not_modified": stats["not_modified"]} if stats["not_modified"] else {}),
        "wall_seconds": round(wall, 3),
        "pages_per_second": round(stats["pages"] / wall, 2),
        "by_status_class": by_status,
        "errors_by_kind": errors,
        "skipped_by_reason": skipped,
        "plugins": plugins,
        **({"after_crawl": crawl.after_crawl} if crawl.after_crawl is not None else {}),
        **({"left_to_do": crawl.left_to_do} if crawl.left_to_do else {}),
    }


async def write_report(crawl: Crawl) -> dict[str, Any]:
    """Write ``report.json`` whole, then rename it into place, without blocking the loop.

    The crawl ends on the event loop while plugins may still be closing their writers:
    aiofiles hands the write and the rename to a thread, so a slow disk delays nothing else.
    """
    import aiofiles
    import aiofiles.os

    report = build_report(crawl)
    path = crawl.archive / REPORT_NAME
    tmp = path.with_suffix(".json.tmp")
    async with aiofiles.open(tmp, "w", encoding="utf-8") as handle:
        await handle.write(json.dumps(report, indent=2) + "\n")
    await aiofiles.os.replace(tmp, path)
    return report
