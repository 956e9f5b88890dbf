"""A live progress bar for a crawl on a terminal; nothing at all elsewhere."""

from __future__ import annotations

import asyncio
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from .frontier import Frontier
from .model import Crawl


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


async def show_progress(crawl: Crawl, frontier: Frontier, console: Console) -> None:
    """Redraw pages done / queued / failed, pages per second and bytes until cancelled."""
    columns = (
        TextColumn("[bold]{task.fields[label]}[/]"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[line]}"),
        TimeElapsedColumn(),
    )
    started = time.monotonic()
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("crawl", total=None, line="", label="crawling")
        while True:
            finishing = crawl.extra.get("finishing")
            if finishing and crawl.finished_at is not None:
                # the pages are archived; a plugin still works (``crawl_finished``) and says on what
                progress.update(task, label="finishing", line=str(finishing))
                await asyncio.sleep(0.25)
                continue
            counts = await frontier.counts()
            stats = crawl.stats
            finished = counts.done + counts.failed
            rate = stats["pages"] / max(time.monotonic() - started, 1e-6)
            extra = "".join(
                f" | {key.split('.', 1)[0]} lag {value}"
                for key, value in stats.items()
                if key.endswith(".pending") and value
            )
            line = (
                f"{counts.done} done, {counts.queued} queued, {counts.failed} failed"
                f" | {rate:.0f} pages/s | {_size(stats['bytes'])}{extra}"
            )
            progress.update(
                task,
                completed=finished,
                total=finished + counts.queued + counts.in_flight,
                line=line,
            )
            await asyncio.sleep(0.25)
