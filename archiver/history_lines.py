"""The crawl history as `archiver status` shows it: one line (or JSON object) per crawl."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .history import CrawlRun


def run_state(run: CrawlRun, last: bool, running: bool) -> str:
    """'complete', 'incomplete' (finished with work left), 'running' or 'interrupted'."""
    if run.finished is not None:
        return "complete" if run.complete else "incomplete"
    return "running" if last and running else "interrupted"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def history_lines(runs: list[CrawlRun], running: bool) -> list[str]:
    lines = []
    for index, run in enumerate(runs):
        state = run_state(run, index == len(runs) - 1, running)
        span = f"started {_when(run.started)}"
        if run.finished is not None:
            span += f", finished {_when(run.finished)}"
        resumed = f", resumed {run.resumes}x" if run.resumes else ""
        lines.append(f"  crawl {run.number} ({run.mode}): {span}{resumed}, {state}")
    return lines


def history_json(runs: list[CrawlRun], running: bool) -> list[dict[str, Any]]:
    return [
        {
            "crawl": run.number,
            "mode": run.mode,
            "started": run.started.isoformat(),
            "finished": run.finished.isoformat() if run.finished else None,
            "state": run_state(run, index == len(runs) - 1, running),
            "complete": run.complete,
            "resumes": run.resumes,
        }
        for index, run in enumerate(runs)
    ]
