"""A QA run from the command line: Chromium found, the event loop, the progress bar."""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.errors import ConfigError

from ..browser import INSTALL_PLAYWRIGHT, find_chromium
from ..browser.settings import BrowserSettings
from .checker import CheckSettings
from .records import PageResult
from .results import Summary
from .run import Selection, check_archive


@dataclass
class Outcome:
    run: int
    summary: Summary
    patch: dict[str, Any] | None = None
    patch_words: str = ""


def chromium() -> str:
    """The Chromium the browser plugin would drive (``CHROMIUM`` or PATH), or a ConfigError."""
    if importlib.util.find_spec("playwright") is None:
        raise ConfigError(f"archiver qa needs Playwright, which is not installed ({INSTALL_PLAYWRIGHT})")
    return find_chromium(BrowserSettings())


def run_qa(archive: Path, selection: Selection, *, tabs: int, page_timeout: float, bar: bool) -> Outcome:
    executable = chromium()
    settings = CheckSettings(page_timeout=page_timeout)
    run, summary = asyncio.run(_checked(archive, executable, selection, tabs, settings, bar))
    return Outcome(run, summary)


async def _checked(
    archive: Path, executable: str, selection: Selection, tabs: int, settings: CheckSettings, bar: bool
) -> tuple[int, Summary]:
    if not bar:
        return await check_archive(archive, executable, selection, tabs=tabs, settings=settings)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("QA"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[lacking]} lacking something"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("qa", total=None, lacking=0)
        lacking = 0

        def started(total: int) -> None:
            progress.update(task, total=total)

        def advance(result: PageResult) -> None:
            nonlocal lacking
            lacking += not result.complete
            progress.update(task, advance=1, lacking=lacking)

        return await check_archive(
            archive,
            executable,
            selection,
            tabs=tabs,
            settings=settings,
            progress=advance,
            started=started,
        )
