"""The bar a ZIM or EPUB export shows on a terminal while it writes (cleared when done)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(fmt: str) -> Iterator[Callable[[int, int], None]]:
    """A `Progress` callback drawing a bar on stderr, removed when the export ends."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    # `Progress` here is rich's display; the export is told of it as a plain callback.

    columns = (TextColumn(f"Exporting {fmt}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(fmt, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance
