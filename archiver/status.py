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

from .errors import ArchiveError, UsageError
from .history import read_history
from .layout import CONFIG_NAME, CRAWL_FOLDERS, CRAWL_LOG_NAME, LOCK_NAME, REPORT_NAME, STATE_NAME
from .lock import Holder, is_locked, read_holder
from .model import Counts
from .pauses import Pauses, read_pauses
from .queue_view import SAMPLE, QueueView, queue_view, trap_findings, view_lines
from .state import describe_hosts, read_counts, read_host_counts, read_queued

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
    limit_use: list[str] = field(default_factory=list)
    """How much of `max_bytes` and `max_time` the crawl used (`used_of_limits`)."""
    queue: QueueView | None = None
    """What the queue holds (`with_queue`)."""
    headline: str | None = None
    details: list[str] = field(default_factory=list)
    """The words of a plugin whose frontier kept the crawl (`archive_status` hook), in place of the core's."""
    hosts: dict[str, int] = field(default_factory=dict)
    """A running crawl's hosts: fetching, waiting (on politeness), paused, ready (`schedule.HostCounts`)."""
    counted: str = ""
    """What the counts are of, when not the whole archive: the state file of a patch
    (`archiver qa --patch`) holds only the URLs it was given."""
    pauses: Pauses = field(default_factory=Pauses)
    """What `archiver control` paused in the running crawl."""

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.archive),
            "state": self.state,
            "frontier": self.frontier,
            **asdict(self.counts),
            "pid": self.holder.pid if self.holder and self.state == RUNNING else None,
            "stale_lock": self.stale_lock,
            "limit_reached": self.limit,
            **({"limit_use": self.limit_use} if self.limit_use else {}),
            **({"queue": asdict(self.queue)} if self.queue is not None else {}),
            "plugins": {str(label): value for label, value in self.plugins},
            **({"shared": self.shared} if self.shared else {}),
            **({"hosts": self.hosts} if self.hosts else {}),
            **(
                {"paused": self.pauses.crawl is not None, "paused_at": self.pauses.crawl}
                if self.state == RUNNING
                else {}
            ),
            **({"paused_hosts": self.pauses.hosts} if self.pauses.hosts else {}),
            **({"counts_of": "patch"} if self.counted else {}),
        }


LIMIT_NAMES = ("max_bytes", "max_time", "min_free_disk")


_RAISED_BY = {"max_bytes": "--max-bytes SIZE", "max_time": "--max-time DURATION"}


def limit_remedy(limit: str, command: str) -> str | None:
    """What lets a crawl stopped at `limit` go on, with `command` (``archiver crawl --resume A``)
    to run; None for a stop that is no limit.

    Every run of a crawl counts toward `max_bytes` and `max_time`, so running the same command
    again would stop at once: the limit must be raised; `min_free_disk` must be lowered, or
    space freed.
    """
    name = limit.split(maxsplit=1)[0].rstrip(":")
    if name in _RAISED_BY:
        return f"to go on, raise it (every run of this crawl counts): `{command} {_RAISED_BY[name]}`"
    if name == "min_free_disk":
        return (
            f"to go on, free some space on the archive's disk and run `{command}`,"
            f" or lower the floor: `{command} --min-free-disk SIZE` (0: none)"
        )
    return None


def used_of_limits(archive: Path) -> list[str]:
    """``received 1.2 MB of max_bytes 1.0 MB``: what the last crawl of `archive` used of its
    byte and time limits, its runs that ended counted; empty without such limits."""
    from .archive import saved_config
    from .history import read_history
    from .units import human_duration, size

    try:
        limits = saved_config(archive).get("limits", {})
        runs = read_history(archive)
    except (ArchiveError, OSError, ValueError):
        return []
    if not runs or not isinstance(limits, dict):
        return []
    last = runs[-1]
    used = []
    max_bytes, max_time = limits.get("max_bytes"), limits.get("max_time")
    if isinstance(max_bytes, int) and max_bytes > 0:
        used.append(f"received {size(last.received)} of max_bytes {size(max_bytes)}")
    if isinstance(max_time, int | float) and max_time > 0:
        used.append(f"crawled {human_duration(last.seconds)} of max_time {human_duration(max_time)}")
    return used


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
            if status.limit is not None:
                status.limit_use = used_of_limits(archive)
        if running:
            status.pauses = read_pauses(archive, holder.since if holder else None)
        runs = read_history(archive)
        if runs and runs[-1].mode == "patch":
            status.counted = "the last patch (archiver qa --patch)"
        return status
    if running:
        pauses = read_pauses(archive, holder.since if holder else None)
        return ArchiveStatus(archive, RUNNING, Counts(), "memory", holder, stale, pauses=pauses)
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
    if (archive / CONFIG_NAME).is_file() or not any((archive / name).is_dir() for name in CRAWL_FOLDERS):
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
    if status.state == RUNNING:
        lines.extend(pause_lines(status.pauses, str(name)))
    if status.limit:
        words = stop_words(status.limit)
        lines.append(f"  {words[:1].lower()}{words[1:]}")
        if status.limit_use:
            lines.append("  used: " + ", ".join(status.limit_use))
        remedy = limit_remedy(status.limit, f"archiver crawl --resume {name}")
        if remedy is not None:
            lines[0] = f"{name}: resumable"  # the plain --resume would stop at once
            lines.append(f"  {remedy}")
    if status.frontier == "sqlite" and status.state != NEW:
        counted = ", ".join(f"{label} {n:,}" for label, n in count_rows(c, status.state == RUNNING))
        lines.append(f"  {status.counted}: {counted}" if status.counted else f"  {counted}")
    if status.hosts and status.state == RUNNING:
        lines.append("  hosts: " + describe_hosts(status.hosts))
    if status.stale_lock and status.holder is not None:
        lines.append(f"  stale lock of {status.holder.describe()}: not running, taken over by the next crawl")
    if status.queue is not None:
        lines.extend(view_lines(status.queue, str(name), c.queued + c.in_flight))
    lines.extend(f"  {label}: {value}" for label, value in status.plugins)
    return "\n".join(lines)


def pause_lines(pauses: Pauses, archive: str) -> list[str]:
    """Who paused what, and the command that undoes it."""
    lines = []
    if pauses.crawl is not None:
        lines.append(
            f"  paused by `archiver control pause` at {pauses.crawl}:"
            f" `archiver control {archive} resume` goes on"
        )
    if pauses.hosts:
        held = ", ".join(f"{host} (since {at})" for host, at in pauses.hosts.items())
        lines.append(
            f"  hosts paused by `archiver control`: {held};"
            f" `archiver control {archive} host HOST resume` releases one"
        )
    return lines


def with_queue(status: ArchiveStatus) -> ArchiveStatus:
    """`status` with what its queue holds, for a crawl kept in SQLite that is not over."""
    if status.frontier == "sqlite" and status.state in (RUNNING, RESUMABLE):
        left = status.counts.queued + status.counts.in_flight
        urls = read_queued(status.archive / STATE_NAME, SAMPLE) if left else []
        status.queue = queue_view(urls)
        status.queue.traps = trap_findings(status.archive / CRAWL_LOG_NAME)
    return status
