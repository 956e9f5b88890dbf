"""Live counts of the crawl writing an archive, read from the files it leaves.

The crawl log is followed from where the last look stopped (only complete lines are
read), so a long log is parsed once, not on every refresh of the status page.
"""

from __future__ import annotations

import collections
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.api import HISTORY_NAME, REPORT_NAME, STATE_NAME, history_json, read_history, status_class

RECENT = 15
_PIECE = 1024 * 1024
"""The log is read this much at a time: a first look at a long log holds no more."""
_MAX_LINE = 16 * _PIECE


@dataclass
class LogFollower:
    """Counters over ``crawl-log.jsonl``, brought up to date by `update()`."""

    path: Path
    offset: int = 0
    inode: int | None = None
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    total_bytes: int = 0
    recent: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=RECENT)
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self) -> None:
        with self._lock:
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                return
            if stat.st_ino != self.inode or stat.st_size < self.offset:  # replaced or truncated
                self._reset(stat.st_ino)
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                carry = b""
                while piece := handle.read(_PIECE):
                    data = carry + piece
                    end = data.rfind(b"\n") + 1
                    for line in data[:end].splitlines():
                        self._count(line)
                    self.offset += end
                    carry = data[end:]
                    if len(carry) > _MAX_LINE:  # no log line is that long: passed over
                        self.offset += len(carry)
                        carry = b""

    def _reset(self, inode: int) -> None:
        self.offset, self.inode, self.total_bytes = 0, inode, 0
        for counter in (self.outcomes, self.statuses, self.errors):
            counter.clear()
        self.recent.clear()

    def _count(self, line: bytes) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return
        if not isinstance(record, dict):
            return
        outcome = str(record.get("outcome") or "fetched")
        self.outcomes[outcome] += 1
        status = status_class(record)
        if status is not None:
            self.statuses[status] += 1
        if record.get("error"):
            self.errors[str(record.get("error")).split(":", 1)[0][:60]] += 1
        if isinstance(record.get("bytes"), int):
            self.total_bytes += record["bytes"]
        self.recent.appendleft(record)


@dataclass
class CrawlStatus:
    archive: str
    running: bool
    holder: str | None
    log: LogFollower | None
    frontier: dict[str, int] | None
    report: dict[str, Any] | None
    problems: list[str]
    crawls: list[dict[str, Any]] = field(default_factory=list)
    """The archive's numbered crawls (`archiver.history_lines.history_json`), oldest first."""
    queue: list[str] = field(default_factory=list)
    """What the queue holds, per host and URL pattern, as `archiver status` words it."""


def _running(folder: Path) -> tuple[bool, str | None]:
    try:
        from archiver.api import is_locked, read_holder
    except ImportError:
        return False, None
    if not is_locked(folder):
        return False, None
    holder = read_holder(folder)
    return True, holder.describe() if holder else None


def _frontier(folder: Path, running: bool) -> dict[str, int] | None:
    path = folder / STATE_NAME
    if not path.is_file():
        return None
    from archiver.api import count_rows, read_counts

    return dict(count_rows(read_counts(path), running))


def crawl_status(name: str, folder: Path, follower: LogFollower | None) -> CrawlStatus:
    """What the files of `folder` say about its crawl; blocking (a few small reads)."""
    problems: list[str] = []
    running, holder = _running(folder)
    if follower is not None:
        follower.update()
    report = None
    report_path = folder / REPORT_NAME
    if report_path.is_file():
        try:
            loaded = json.loads(report_path.read_text(encoding="utf-8"))
            report = loaded if isinstance(loaded, dict) else None
        except (OSError, ValueError) as exc:
            problems.append(f"{REPORT_NAME}: {exc}")
    frontier = None
    try:
        frontier = _frontier(folder, running)
    except Exception as exc:  # a state file being written or from another version
        problems.append(f"{STATE_NAME}: {exc}")
    crawls: list[dict[str, Any]] = []
    try:
        crawls = history_json(read_history(folder), running)
    except OSError as exc:
        problems.append(f"{HISTORY_NAME}: {exc}")
    queue: list[str] = []
    if frontier is not None:
        try:
            queue = _queue(folder)
        except Exception as exc:  # as for the counts: a state being written, another version
            problems.append(f"{STATE_NAME}: {exc}")
    return CrawlStatus(name, running, holder, follower, frontier, report, problems, crawls, queue)


def _queue(folder: Path) -> list[str]:
    from archiver.api import archive_status, view_lines, with_queue

    status = with_queue(archive_status(folder))
    if status.queue is None:
        return []
    left = status.counts.queued + status.counts.in_flight
    return [line.removeprefix("  ") for line in view_lines(status.queue, str(folder), left)]
