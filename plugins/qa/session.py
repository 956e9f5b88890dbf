"""A QA run from the command line: Chromium found, the event loop, the progress bar."""

from __future__ import annotations

import asyncio
import contextlib
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
    from rich.progress import Progress, TaskID

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
        lacking,
        pages_lacking,
        patch_config,
        plan_patch,
        record_patched,
        start_fresh,
    )

    plan = plan_patch(archive)
    before = None
    if plan.resume:
        config, wanted = patch_config(archive, [], resume=True)
    else:
        run, summary = asyncio.run(_checked(archive, executable, selection, tabs, settings, bar))
        tried = already_patched(archive)
        wanted = lacking(archive, [url for url in summary.missing_urls if url not in tried])
        if not wanted:
            words = "Nothing to patch: no resource is missing that an earlier patch was not given."
            return Outcome(run, summary, patch={"resources": 0}, patch_words=words)
        before = (run, summary)
        start_fresh(archive)
        config, wanted = patch_config(archive, wanted, resume=False)
    keep_config(archive)
    crawl = None
    try:
        crawl = _crawl(config, wanted, bar)
    finally:
        finished(archive, complete=crawl is not None and crawl.complete)
    if crawl.complete:
        record_patched(archive, [url for url, _ in wanted])
    report = _patch_report(crawl, len(wanted))
    if crawl.interrupted:
        raise PatchInterrupted(crawl.signal or signal.SIGINT)
    pages = pages_lacking(archive, [url for url, _ in wanted])
    again = Selection(urls=frozenset(pages))
    run, summary = asyncio.run(_checked(archive, executable, again, tabs, settings, bar))
    return Outcome(run, summary, patch=report, patch_words=_patch_words(report), before=before)


class ChecksInterrupted(Exception):
    """Ctrl-C (or SIGTERM) while pages were checked: how far the check got."""

    def __init__(self, checked: int, total: int, lacking: int) -> None:
        super().__init__(f"QA interrupted after {checked} of {total} pages")
        self.checked, self.total, self.lacking = checked, total, lacking


class PatchInterrupted(Exception):
    """The patch crawl stopped on a signal: running the same command again resumes it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"patch interrupted by signal {signum}")
        self.signum = signum


def _crawl(config: Any, wanted: list[tuple[str, str]], bar: bool) -> Crawl:
    from archiver.api import ArchiverError, loop_factory, make_plugin_manager, run_crawl

    pm = make_plugin_manager(disabled=config.disable, modules=config.enable)
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(
                run_crawl(
                    config,
                    pm,
                    install_signals=True,
                    show_progress=bar,
                    mode="patch",
                    seed_requisites=wanted,
                )
            )
    except* ArchiverError as group:
        raise group.exceptions[0] from None


def _patch_report(crawl: Crawl, asked: int) -> dict[str, Any]:
    from archiver.api import build_report

    report = build_report(crawl)
    return {
        "crawl": crawl.number,
        "resources": asked,
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
    """One QA run, with its progress bar on a terminal; ChecksInterrupted on Ctrl-C."""
    total = checked = lacking = 0
    loop = asyncio.get_running_loop()
    stopping = False

    def quiet_once_stopping(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Ctrl-C reaches Chromium and Playwright's driver too: their connection's futures
        # fail as they die, which is the interruption, not a fault worth a traceback
        if not stopping:
            loop.default_exception_handler(context)

    loop.set_exception_handler(quiet_once_stopping)

    def started(pages: int) -> None:
        nonlocal total
        total = pages
        if progress is not None and task is not None:
            progress.update(task, total=pages)

    def advance(result: PageResult) -> None:
        nonlocal checked, lacking
        checked += 1
        lacking += not result.complete
        if progress is not None and task is not None:
            progress.update(task, advance=1, lacking=lacking)

    progress: Progress | None = None
    task: TaskID | None = None
    with contextlib.ExitStack() as stack:
        if bar:
            progress = stack.enter_context(_bar())
            task = progress.add_task("qa", total=None, lacking=0)
        try:
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
        except asyncio.CancelledError:
            stopping = True
            raise ChecksInterrupted(checked, total, lacking) from None


def _bar() -> Progress:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("QA"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pages checked, {task.fields[lacking]} lacking something,"),
        TimeRemainingColumn(),
        TextColumn("left"),
    )
    return Progress(*columns, console=Console(stderr=True), transient=True)
