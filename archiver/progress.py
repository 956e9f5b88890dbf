"""A live progress display for a crawl on a terminal; nothing at all elsewhere.

A few short lines, each cut to the terminal's width: the stage with its bar, elapsed time
and an estimate of the time left; the counts; and what bounds the pace when something
does (the politeness delay, the workers), with the option that changes it.  When the
pages are all fetched and a plugin still works (the index catching up), that is a stage
of its own, with its own count and timer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from .frontier import Counts, Frontier
from .model import Crawl
from .politeness import HostLimiter
from .schedule import HostCounts, HostSchedule
from .units import plural, size

REFRESH_SECONDS = 0.25
RATE_WINDOW = 10.0
"""Seconds of recent progress the rate and the estimate of the time left are taken over."""
_BAR_WIDTH = 20


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _bar(done: int, total: int) -> str:
    if total <= 0:
        return "─" * _BAR_WIDTH + "    "
    share = min(done / total, 1.0)
    filled = round(share * _BAR_WIDTH)
    return "━" * filled + "─" * (_BAR_WIDTH - filled) + f" {share:>4.0%}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one redraw shows."""

    label: str
    done: int
    total: int
    elapsed: float
    left: float | None
    details: str
    pace: str | None = None


def crawl_lines(snapshot: Snapshot) -> list[str]:
    """The display's lines, before they are cut to the terminal's width."""
    timing = f"{_clock(snapshot.elapsed)} elapsed"
    if snapshot.left is not None:
        timing += f", about {_clock(snapshot.left)} left"
    lines = [
        f"{snapshot.label:<10} {_bar(snapshot.done, snapshot.total)}  {timing}",
        *snapshot.details.split("\n"),
    ]
    if snapshot.pace:
        lines.extend(snapshot.pace.split("\n"))
    return lines


def crawling_details(counts: Counts, speed: float, received: int, lag: str = "") -> str:
    """The counts lines while pages are fetched; sizes in the unit of the final summary.

    For a crawl shared by several processes the totals are the whole crawl's, then a line
    gives this process's share."""
    totals = f"{counts.done:,} done, {counts.queued:,} queued, {counts.failed:,} failed"
    if counts.this_process is None:
        return f"{totals} | {speed:.0f} pages/s | {size(received)}{lag}"
    return (
        f"whole crawl: {totals} | {speed:.0f} pages/s\n"
        f"this process: {plural(counts.this_process, 'page')}, {size(received)}{lag}"
    )


def render(snapshot: Snapshot) -> Group:
    return Group(*(Text(line, no_wrap=True, overflow="ellipsis") for line in crawl_lines(snapshot)))


def pace_note(
    limiter: HostLimiter | None,
    counts: Counts,
    max_tasks: int,
    hosts: HostCounts | None = None,
    options: bool = True,
) -> str | None:
    """What holds the crawl back now, in words, with the setting that changes it; None if nothing.

    `options`: whether the command takes the crawl's options (`--delay`); a patch of
    `archiver qa --patch` does not, and crawls with the settings of the archive's crawl.toml.
    """
    if limiter is not None:
        waited = limiter.last_wait()
        if waited is not None and hosts is not None and hosts.waiting + hosts.paused > 1 and not hosts.ready:
            _site, gap, source = waited
            change = (
                "--delay SECONDS, --per-host-concurrency N (or [politeness])"
                if options
                else "delay, per_host_concurrency in [politeness] of the archive's crawl.toml"
            )
            return (
                f"polite across {hosts.waiting + hosts.paused:,} hosts: each waits {gap:g} s"
                f" between its requests ({source}), and workers wait for the next host's turn\n"
                f"  to change it: {change}"
            )
        if waited is not None:
            site, gap, source = waited
            change = (
                "--delay SECONDS (or delay in [politeness])"
                if options
                else "delay in [politeness] of the archive's crawl.toml"
            )
            return f"polite: {gap:g} s between requests to {site} ({source})\n  to change it: {change}"
    if counts.fetching >= max_tasks:
        more = "--max-tasks" if options else "max_tasks in the archive's crawl.toml"
        return f"all {max_tasks} workers busy: {more} raises their number"
    return None


class _Rate:
    """Pages per second over the last `RATE_WINDOW` seconds."""

    def __init__(self) -> None:
        self._points: collections.deque[tuple[float, int]] = collections.deque()

    def add(self, now: float, finished: int) -> float:
        self._points.append((now, finished))
        while len(self._points) > 2 and now - self._points[0][0] > RATE_WINDOW:
            self._points.popleft()
        first_time, first = self._points[0]
        span = now - first_time
        return (finished - first) / span if span > 0.5 else 0.0


def _left(remaining: int, rate: float) -> float | None:
    return remaining / rate if rate > 0 and remaining > 0 else None


async def show_progress(
    crawl: Crawl, frontier: Frontier, console: Console, limiter: HostLimiter | None = None
) -> None:
    """Redraw the crawl's progress until cancelled."""
    started = time.monotonic()
    stderr = sys.stderr
    with Live(console=console, auto_refresh=False, transient=False) as live, _logs_above(stderr):
        await _redraw(crawl, frontier, live, limiter, started)


@contextlib.contextmanager
def _logs_above(stderr: TextIO) -> Iterator[None]:
    """Log lines (warnings, `archiver control`'s acknowledgements) printed above the live
    display on lines of their own: their handlers write to the stream `Live` put in place of
    `stderr`, where they would otherwise be glued to the progress line and cut at its width."""
    proxy = sys.stderr
    moved = [
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, logging.StreamHandler) and handler.stream is stderr and proxy is not stderr
    ]
    for handler in moved:
        handler.setStream(proxy)
    try:
        yield
    finally:
        for handler in moved:
            handler.setStream(stderr)


async def _redraw(
    crawl: Crawl, frontier: Frontier, live: Live, limiter: HostLimiter | None, started: float
) -> None:
    """The display's loop; cancelled when the crawl ends, after a last frame of the catch-up
    with its final count (the one the summary gives)."""
    rate = _Rate()
    stage: tuple[str, int, float] | None = None  # after the crawl: (label, pages to go, started)
    try:
        while True:
            now = time.monotonic()
            finishing = crawl.finishing
            if finishing and crawl.finished_at is not None:
                # the pages are archived; a plugin still works (``crawl_finished``) and says on what
                waiting = {k.split(".", 1)[0]: v for k, v in crawl.stats.items() if k.endswith(".pending")}
                if stage is None:
                    # the plugin with pages left, else the one that had some as it began
                    began = (k.split(".", 1)[0] for k, n in crawl.pending_at_end.items() if n)
                    name = next((k for k, v in waiting.items() if v), next(began, "plugins"))
                    at_end = crawl.pending_at_end.get(f"{name}.pending", 0)
                    # the count the plugin took as it began: the summary's "caught up" is
                    # counted from it too
                    stage = (name, at_end or max(waiting.get(name, 0), 1), now)
                    rate = _Rate()
                name, total, stage_started = stage
                done = min(max(total - waiting.get(name, 0), 0), total)
                speed = rate.add(now, done)
                snapshot = Snapshot(
                    f"{name} catch-up",
                    done,
                    total,
                    now - stage_started,
                    _left(total - done, speed),
                    f"{done:,} of {total:,} pages | {speed:.0f} pages/s",
                    str(finishing),
                )
            else:
                counts = await frontier.counts()
                stats = crawl.stats
                finished = counts.done + counts.failed
                speed = rate.add(now, finished)
                lag = "".join(
                    f" | {key.split('.', 1)[0]} lag {value:,}"
                    for key, value in stats.items()
                    if key.endswith(".pending") and value
                )
                details = crawling_details(counts, speed, stats["bytes"], lag)
                remaining = counts.queued + counts.in_flight
                schedule = getattr(frontier, "schedule", None)
                hosts = schedule.host_counts(now) if isinstance(schedule, HostSchedule) else None
                if hosts is not None and sum(hosts) > 1:
                    details += f"\nhosts: {hosts.describe()}"
                snapshot = Snapshot(
                    "paused" if crawl.paused else "crawling",
                    finished,
                    finished + remaining,
                    now - started,
                    _left(remaining, speed),
                    details,
                    pace_note(limiter, counts, crawl.config.max_tasks, hosts, crawl.mode != "patch"),
                )
            live.update(render(snapshot), refresh=True)
            await asyncio.sleep(REFRESH_SECONDS)
    except asyncio.CancelledError:
        if stage is None and crawl.finished_at is not None:
            # the catch-up began and ended between two frames: it still gets its last one
            ended = [(k.split(".", 1)[0], n) for k, n in crawl.pending_at_end.items() if n]
            if ended:
                seconds = float((crawl.after_crawl or {}).get("seconds", 0.0))
                stage = (*ended[0], time.monotonic() - seconds)
        if stage is not None:
            name, total, stage_started = stage
            done = min(max(total - crawl.stats.get(f"{name}.pending", 0), 0), total)
            ended_as = "interrupted" if crawl.interrupted and done < total else "done"
            final = Snapshot(
                f"{name} catch-up",
                done,
                total,
                time.monotonic() - stage_started,
                None,
                f"{done:,} of {total:,} pages | {ended_as}",
            )
            live.update(render(final), refresh=True)
        raise
