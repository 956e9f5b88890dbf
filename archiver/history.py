"""The archive's crawl history (`crawls.jsonl`): which crawls ran into it, and when.

An archive is crawled more than once (`--recrawl`, `--update`, `qa --patch`), and "what changed" only has a
meaning between two numbered crawls. The WARC files say when each capture was made, not which
crawl made it; this file gives the crawls' numbers and time spans, so a capture belongs to the
crawl whose span holds its date.

One JSON object per line, appended and flushed as it happens, like the crawl log:

    {"event": "start", "crawl": 2, "mode": "update", "at": "2026-11-23T10:00:00+00:00"}
    {"event": "resume", "crawl": 2, "at": "..."}
    {"event": "finish", "crawl": 2, "at": "...", "complete": true}

A torn last line (the process was killed while writing it) is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from .layout import HISTORY_NAME, REPORT_NAME, WARC_FOLDER

MAX_HISTORY_BYTES = 16 * 1024 * 1024
"""A history is a few lines per crawl; anything larger is not one of ours."""

Mode = Literal["crawl", "recrawl", "update", "patch"]
"""``patch``: a crawl of only the resources ``archiver qa --patch`` found missing (the qa plugin)."""
MODES: tuple[Mode, ...] = get_args(Mode)


@dataclass(frozen=True, slots=True)
class CrawlRun:
    """One numbered crawl: started once, perhaps resumed, finished when its queue emptied."""

    number: int
    mode: Mode
    started: datetime
    finished: datetime | None = None
    complete: bool = False
    resumes: int = 0
    received: int = 0
    """Bytes received by the runs of this crawl that ended (the limits count them all)."""
    seconds: float = 0.0
    """Seconds crawled by the runs of this crawl that ended."""

    def holds(self, when: datetime, next_start: datetime | None) -> bool:
        """Whether a capture made at `when` belongs to this crawl.

        A crawl's span runs to the next crawl's start, not to its own finish: an
        interrupted crawl that was never resumed still owns what it captured.
        """
        return self.started <= when and (next_start is None or when < next_start)


def read_history(archive: Path) -> list[CrawlRun]:
    """The archive's crawls, oldest first; empty when it has no history file."""
    path = archive / HISTORY_NAME
    try:
        with path.open("rb") as file:
            data = file.read(MAX_HISTORY_BYTES + 1)
    except FileNotFoundError:
        return []
    runs: dict[int, CrawlRun] = {}
    for line in data[:MAX_HISTORY_BYTES].splitlines():
        event = _parse(line)
        if event is None:
            continue
        number, kind, at = event["crawl"], event["event"], event["at"]
        if kind == "start":
            runs[number] = CrawlRun(number, event["mode"], at)
        elif number in runs and kind == "resume":
            runs[number] = replace(runs[number], resumes=runs[number].resumes + 1, finished=None)
        elif number in runs and kind == "finish":
            run = runs[number]
            runs[number] = replace(
                run,
                finished=at,
                complete=bool(event.get("complete")),
                received=run.received + _count(event.get("bytes")),
                seconds=run.seconds + _count(event.get("seconds")),
            )
    return [runs[number] for number in sorted(runs)]


def record_start(archive: Path, mode: Mode, at: datetime) -> CrawlRun:
    """Number a new crawl of `archive` and write its start line.

    An archive crawled before crawls were numbered has no history: its earlier crawl
    becomes crawl 1, dated from its report (see `_earlier_crawl`), and this one crawl 2.
    """
    runs = read_history(archive)
    if not runs:
        earlier = _earlier_crawl(archive)
        if earlier is not None:
            started, finished, complete = earlier
            _append(archive, {"event": "start", "crawl": 1, "mode": "crawl", "at": started.isoformat()})
            if finished is not None:
                record_finish(archive, 1, finished, complete=complete)
            runs = read_history(archive)
    run = CrawlRun(runs[-1].number + 1 if runs else 1, mode, at)
    _append(archive, {"event": "start", "crawl": run.number, "mode": mode, "at": at.isoformat()})
    return run


def record_resume(archive: Path, at: datetime) -> CrawlRun:
    """Note that the latest crawl goes on; a history-less archive gets its first number."""
    runs = read_history(archive)
    if not runs:
        return record_start(archive, "crawl", at)
    _append(archive, {"event": "resume", "crawl": runs[-1].number, "at": at.isoformat()})
    return replace(runs[-1], resumes=runs[-1].resumes + 1, finished=None)


def interrupted_update(archive: Path) -> bool:
    """Whether the latest crawl of `archive` is an update that did not run to its end."""
    runs = read_history(archive)
    return bool(runs) and runs[-1].mode == "update" and not runs[-1].complete


def _earlier_crawl(archive: Path) -> tuple[datetime, datetime | None, bool] | None:
    """(start, finish, complete) of a crawl made before the history existed, or None.

    Its report.json says when it ran.  A crawl killed before writing one is dated by the
    oldest last-write time of its WARC files: an approximation (the core does not read WARC
    records), no earlier than its first captures but the best the folder tells.
    """
    try:
        report = json.loads((archive / REPORT_NAME).read_bytes()[:MAX_HISTORY_BYTES])
        started = datetime.fromisoformat(report["started_at"])
        finished = datetime.fromisoformat(report["finished_at"]) if report.get("finished_at") else None
        if started.tzinfo is not None:
            return started, finished, bool(report.get("complete", not report.get("interrupted")))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    warc = archive / WARC_FOLDER
    moments = [p.stat().st_mtime for p in warc.iterdir()] if warc.is_dir() else []
    if not moments:
        return None
    return datetime.fromtimestamp(min(moments), UTC), None, False


def record_finish(
    archive: Path, number: int, at: datetime, *, complete: bool, received: int = 0, seconds: float = 0.0
) -> None:
    """The end of a run, with what it received and how long it ran: a resumed crawl's limits
    count every run (a run killed before this line is not counted)."""
    event = {"event": "finish", "crawl": number, "at": at.isoformat(), "complete": complete}
    if received or seconds:
        event.update(bytes=received, seconds=round(seconds, 3))
    _append(archive, event)


def _count(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0


def _append(archive: Path, event: dict[str, Any]) -> None:
    line = (json.dumps(event, ensure_ascii=False) + "\n").encode()
    fd = os.open(archive / HISTORY_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # end a line torn by a killed process; it stays unreadable
        os.write(fd, line)
    finally:
        os.close(fd)


def _parse(line: bytes) -> dict[str, Any] | None:
    """One well-formed event, or None for a torn or foreign line."""
    try:
        event = json.loads(line)
        event["at"] = datetime.fromisoformat(event["at"])
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(event, dict) or not isinstance(event.get("crawl"), int) or event["crawl"] < 1:
        return None
    if event.get("event") == "start" and event.get("mode") not in MODES:
        return None
    if event.get("event") not in ("start", "resume", "finish") or event["at"].tzinfo is None:
        return None
    return event
