"""A QA run from the command line: Chromium found, the event loop, the progress bar."""

from __future__ import annotations

import asyncio
import importlib.util
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver.api import ConfigError

from ..browser import INSTALL_PLAYWRIGHT, find_chromium
from ..browser.settings import BrowserSettings
from .checker import CheckSettings
from .records import PageResult
from .results import Summary
from .run import Selection, check_archive

if TYPE_CHECKING:
    from archiver.api import Crawl


@dataclass
class Outcome:
    run: int
    summary: Summary
    patch: dict[str, Any] | None = None
    patch_words: str = ""
    before: tuple[int, Summary] | None = None
    """With --patch: the run before the patch, and what it found."""


def chromium() -> str:
    """The Chromium the browser plugin would drive (``CHROMIUM`` or PATH), or a ConfigError."""
    if importlib.util.find_spec("playwright") is None:
        raise ConfigError(f"archiver qa needs Playwright, which is not installed ({INSTALL_PLAYWRIGHT})")
    return find_chromium(BrowserSettings())


def run_qa(
    archive: Path,
    selection: Selection,
    *,
    tabs: int,
    page_timeout: float,
    bar: bool,
    patch: bool = False,
    export: Path | None = None,
) -> Outcome:
    """QA of `archive` (or of its `export`); with `patch`, then a patch crawl of what is missing
    and QA of those pages again."""
    executable = chromium()
    settings = CheckSettings(page_timeout=page_timeout)
    if not patch:
        run, summary = asyncio.run(_checked(archive, executable, selection, tabs, settings, bar, export))
        return Outcome(run, summary)
    from .patch import (
        already_patched,
        finished,
        keep_config,
        pages_lacking,
        patch_config,
        plan_patch,
        record_patched,
        start_fresh,
    )

    plan = plan_patch(archive)
    before = None
    if plan.resume:
        config = patch_config(archive, [], resume=True)
    else:
        run, summary = asyncio.run(_checked(archive, executable, selection, tabs, settings, bar))
        tried = already_patched(archive)
        wanted = [url for url in summary.missing_urls if url not in tried]
        if not wanted:
            words = "Nothing to patch: no resource is missing that an earlier patch was not given."
            return Outcome(run, summary, patch={"resources": 0}, patch_words=words)
        before = (run, summary)
        start_fresh(archive)
        config = patch_config(archive, wanted, resume=False)
    keep_config(archive)
    crawl = None
    try:
        crawl = _crawl(config, bar)
    finally:
        finished(archive, complete=crawl is not None and crawl.complete)
    if crawl.complete:
        record_patched(archive, config.roots)
    report = _patch_report(crawl)
    if crawl.interrupted:
        raise PatchInterrupted(crawl.signal or signal.SIGINT)
    pages = pages_lacking(archive, config.roots)
    again = Selection(urls=frozenset(pages))
    run, summary = asyncio.run(_checked(archive, executable, again, tabs, settings, bar))
    return Outcome(run, summary, patch=report, patch_words=_patch_words(report), before=before)


class PatchInterrupted(Exception):
    """The patch crawl stopped on a signal: running the same command again resumes it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"patch interrupted by signal {signum}")
        self.signum = signum


def _crawl(config: Any, bar: bool) -> Crawl:
    from archiver.api import ArchiverError, loop_factory, make_plugin_manager, run_crawl

    pm = make_plugin_manager(disabled=config.disable, modules=config.enable)
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(run_crawl(config, pm, install_signals=True, show_progress=bar, mode="patch"))
    except* ArchiverError as group:
        raise group.exceptions[0] from None


def _patch_report(crawl: Crawl) -> dict[str, Any]:
    from archiver.api import build_report

    report = build_report(crawl)
    return {
        "crawl": crawl.number,
        "resources": len(crawl.roots),
        "fetched": report["pages"],
        "failed": report["failed"],
        "by_status_class": report["by_status_class"],
        "complete": report["complete"],
    }


def _patch_words(report: dict[str, Any]) -> str:
    statuses = ", ".join(f"{name} {n}" for name, n in report["by_status_class"].items()) or "none"
    return (
        f"Patch (crawl {report['crawl']}): {report['resources']} missing resources asked for; "
        f"{report['fetched']} responses archived ({statuses}), {report['failed']} failed. "
        "The pages that lacked them were checked again:"
    )


async def _checked(
    archive: Path,
    executable: str,
    selection: Selection,
    tabs: int,
    settings: CheckSettings,
    bar: bool,
    export: Path | None = None,
) -> tuple[int, Summary]:
    if not bar:
        return await check_archive(
            archive, executable, selection, tabs=tabs, settings=settings, export=export
        )
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
            export=export,
        )
