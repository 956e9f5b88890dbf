"""`archiver status ARCHIVE`: how far a crawl got and what running it again would do.

Everything is read without disturbing a crawl that may be running: the totals come
from `state.sqlite` (saved with every commit, at most half a second old), whether a
crawl is running from the archive's lock, and plugins add their own lines through
the `archive_status` hook (the index plugin reports how far the index lags; the redis
plugin fills in the state of a crawl shared through Redis).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .archive import CONFIG_NAME
from .crawllog import LOG_NAME, REPORT_NAME
from .errors import ArchiveError, UsageError
from .lock import LOCK_NAME, Holder, is_locked, read_holder
from .model import Counts
from .queue_view import SAMPLE, QueueView, queue_view, trap_findings, view_lines
from .state import STATE_NAME, describe_hosts, read_counts, read_host_counts, read_queued

NEW, RUNNING, COMPLETE, RESUMABLE, NOT_RESUMABLE = "new", "running", "complete", "resumable", "not resumable"


@dataclass
class ArchiveStatus:
    """What an archive folder says about its crawl."""

    archive: Path
    state: str
    counts: Counts = field(default_factory=Counts)
    frontier: str = "sqlite"
    holder: Holder | None = None
    stale_lock: bool = False
    plugins: list[tuple[str, Any]] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)
    """For a worker of a crawl shared by many processes: the crawl's name, workers, errors."""
    limit: str | None = None
    """The limit that stopped the last run of a resumable crawl, in words."""
    queue: QueueView | None = None
    """What the queue holds (`with_queue`)."""
    headline: str | None = None
    details: list[str] = field(default_factory=list)
    """The words of a plugin whose frontier kept the crawl (`archive_status` hook), in place of the core's."""
    hosts: dict[str, int] = field(default_factory=dict)
    """A running crawl's hosts: fetching, waiting (on politeness), paused, ready (`schedule.HostCounts`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.archive),
            "state": self.state,
            "frontier": self.frontier,
            **asdict(self.counts),
            "pid": self.holder.pid if self.holder and self.state == RUNNING else None,
            "stale_lock": self.stale_lock,
            "limit_reached": self.limit,
            **({"queue": asdict(self.queue)} if self.queue is not None else {}),
            "plugins": {str(label): value for label, value in self.plugins},
            **({"shared": self.shared} if self.shared else {}),
            **({"hosts": self.hosts} if self.hosts else {}),
        }


LIMIT_NAMES = ("max_bytes", "max_time", "min_free_disk")


def stop_words(reason: str) -> str:
    """``Stopped at a limit: max_time 8s reached``, or ``Stopped by `archiver control stop```."""
    return (
        f"Stopped at a limit: {reason}" if reason.startswith(LIMIT_NAMES) else reason[:1].upper() + reason[1:]
    )


def _report_limit(archive: Path) -> str | None:
    try:
        report = json.loads((archive / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    limit = report.get("limit_reached") if isinstance(report, dict) else None
    return limit if isinstance(limit, str) else None


def _report_complete(archive: Path) -> bool | None:
    try:
        report = json.loads((archive / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return bool(report.get("complete")) if isinstance(report, dict) else None


def _ended_complete(archive: Path) -> bool:
    """Whether the crawl whose queue is empty ended complete: one whose plugins had pages
    left to handle (the index's catch-up stopped by a full disk) ended resumable."""
    from .history import read_history

    runs = read_history(archive)
    last = runs[-1] if runs else None
    return last is None or last.finished is None or last.complete


def archive_status(archive: Path) -> ArchiveStatus:
    """Inspect `archive`; an absent folder is `new`, a folder that is no archive an error."""
    if not archive.exists():
        return ArchiveStatus(archive, NEW)
    if not archive.is_dir():
        raise UsageError(f"{archive} is not a folder")
    running = is_locked(archive)
    holder = read_holder(archive)
    stale = holder is not None and not running
    state_path = archive / STATE_NAME
    if state_path.is_file():
        try:
            counts = read_counts(state_path)
        except sqlite3.OperationalError as exc:
            raise ArchiveError(f"{state_path}: cannot read the crawl state ({exc})") from None
        if running:
            state = RUNNING
        elif counts.seen == 0:
            state = NEW
        elif counts.finished:
            state = COMPLETE if _ended_complete(archive) else RESUMABLE
        else:
            state = RESUMABLE
        hosts = read_host_counts(state_path) if running else {}
        status = ArchiveStatus(archive, state, counts, "sqlite", holder, stale, hosts=hosts)
        if state == RESUMABLE:
            status.limit = _report_limit(archive)
        return status
    if running:
        return ArchiveStatus(archive, RUNNING, Counts(), "memory", holder, stale)
    if not (archive / CONFIG_NAME).is_file():
        if any(p.name != LOCK_NAME for p in archive.iterdir()):
            raise UsageError(f"{archive} is not an archive (no {CONFIG_NAME})")
        return ArchiveStatus(archive, NEW)
    # A crawl with the memory frontier leaves no state: only its report can tell.
    state = COMPLETE if _report_complete(archive) else NOT_RESUMABLE
    return ArchiveStatus(archive, state, Counts(), "memory", holder, stale)


def imported_status(archive: Path) -> ArchiveStatus | None:
    """The status of a folder that `reindex --warc -o ARCHIVE` filled with other tools' WARC
    files: search, serve and export read it, so `status` says what it is rather than calling it
    no archive (`crawl` still refuses it: `archive_status` does)."""
    if (archive / CONFIG_NAME).is_file() or not any((archive / name).is_dir() for name in ("warc", "index")):
        return None
    headline = f"{archive}: no crawl; WARC files indexed by `archiver reindex --warc`"
    return ArchiveStatus(archive, NEW, frontier="none", headline=headline)


def count_rows(counts: Counts, running: bool) -> list[tuple[str, int]]:
    """The frontier's totals as `status` and the web UI's status page both show them.

    A crawl that stopped without closing its frontier (a kill, a crash) left a whole leased
    batch in flight on disk; only those a worker had begun were perhaps fetched, and resume
    looks them up in the WARC files (fetching them again if they are not there).  The rest
    were never fetched: they count as queued.
    """
    if running:
        return [
            ("done", counts.done),
            ("queued", counts.queued),
            ("failed", counts.failed),
            ("taken from the queue", counts.in_flight),
            ("being fetched", counts.fetching),
        ]
    begun = min(counts.fetching, counts.in_flight)
    rows = [
        ("done", counts.done),
        ("queued", counts.queued + counts.in_flight - begun),
        ("failed", counts.failed),
    ]
    if begun:
        rows.append(("being fetched when it stopped", begun))
    return rows


def describe(status: ArchiveStatus) -> str:
    """The status in words, as `archiver status` prints it above the crawl history."""
    if status.headline is not None:
        lines = [status.headline, *status.details]
        return "\n".join([*lines, *(f"  {label}: {value}" for label, value in status.plugins)])
    c = status.counts
    name = status.archive
    headline = {
        NEW: f"{name}: no crawl yet",
        RUNNING: f"{name}: running ({status.holder.describe() if status.holder else 'another process'})",
        COMPLETE: f"{name}: complete",
        RESUMABLE: f"{name}: resumable: run `archiver crawl --resume {name}` to continue",
        NOT_RESUMABLE: f"{name}: interrupted; its crawl kept no state (memory frontier), so it cannot resume",
    }[status.state]
    lines = [headline]
    if status.limit:
        words = stop_words(status.limit)
        lines.append(f"  {words[:1].lower()}{words[1:]}")
    if status.frontier == "sqlite" and status.state != NEW:
        lines.append("  " + ", ".join(f"{label} {n}" for label, n in count_rows(c, status.state == RUNNING)))
    if status.hosts and status.state == RUNNING:
        lines.append("  hosts: " + describe_hosts(status.hosts))
    if status.stale_lock and status.holder is not None:
        lines.append(f"  stale lock of {status.holder.describe()}: not running, taken over by the next crawl")
    if status.queue is not None:
        lines.extend(view_lines(status.queue, str(name), c.queued + c.in_flight))
    lines.extend(f"  {label}: {value}" for label, value in status.plugins)
    return "\n".join(lines)


def with_queue(status: ArchiveStatus) -> ArchiveStatus:
    """`status` with what its queue holds, for a crawl kept in SQLite that is not over."""
    if status.frontier == "sqlite" and status.state in (RUNNING, RESUMABLE):
        left = status.counts.queued + status.counts.in_flight
        urls = read_queued(status.archive / STATE_NAME, SAMPLE) if left else []
        status.queue = queue_view(urls)
        status.queue.traps = trap_findings(status.archive / LOG_NAME)
    return status
