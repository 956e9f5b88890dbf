"""Running one crawl from start to report: the archive's lock, Ctrl-C, the progress bar, the exit code.

The engine (`crawler.Crawler`) knows nothing of terminals, signals or processes; the
commands (`archiver crawl`, and `archiver worker` of the redis plugin) know nothing of
the engine.  This module is what sits between them, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import pluggy

from .archive import prepare_archive
from .config import Config
from .crawler import GRACE_SECONDS, Crawler
from .crawllog import build_report
from .errors import (
    ArchiveError,
    ArchiverError,
    ConfigError,
    FrontierUnreachable,
    UsageError,
    exhausted,
    exhausted_message,
)
from .frontier import Frontier, MemoryFrontier
from .frontier_sqlite import SqliteFrontier
from .history import Mode
from .layout import CONFIG_NAME, CRAWL_LOG_NAME, LOCK_NAME, REPORT_NAME, STATE_NAME
from .lock import ArchiveLock
from .manager import Hooks, make_plugin_manager
from .model import Crawl
from .status import limit_remedy, stop_words
from .terminal import echo
from .units import plural, size

log = logging.getLogger(__name__)

LIMIT_EXIT_CODE = 3
"""`archiver crawl` stopped at --max-bytes, --max-time or --min-free-disk: resumable, not an error."""


async def run_crawl(
    config: Config,
    pm: pluggy.PluginManager,
    *,
    install_signals: bool = False,
    show_progress: bool = False,
    mode: Mode = "crawl",
    seed_requisites: Sequence[tuple[str, str]] | None = None,
) -> Crawl:
    """Run one crawl to its end (or until SIGINT/SIGTERM when `install_signals`).

    `seed_requisites`, (url, page) pairs, are queued instead of the roots, each as a requisite of
    its page: what a QA patch fetches, under the rules of the archive's own crawl.

    A first signal stops the crawl gracefully; a second cancels the fetches in flight.
    """
    hooks = Hooks(pm)
    hooks.configure(config)
    created = bool(config.output) and _missing(Path(config.output))
    try:
        with ArchiveLock(Path(config.output)) if config.output else contextlib.nullcontext():
            return await _run_in_archive(config, hooks, install_signals, show_progress, mode, seed_requisites)
    except (ConfigError, FrontierUnreachable):
        if created:
            _remove_if_unstarted(Path(config.output))
        raise


def _missing(path: Path) -> bool:
    return not path.exists()


_SETUP_FILES = frozenset({CONFIG_NAME, LOCK_NAME})
"""What a folder holds when its crawl failed before it began (a bad setting of a plugin, its
frontier unreachable); a worker that joined a finished shared crawl keeps its folder, which
`merge` takes."""


def _remove_if_unstarted(archive: Path) -> None:
    """Remove the folder a crawl that never began just made, so that nothing calls it an archive
    (`status` took one whose shared frontier was never reached for a worker of that crawl)."""
    try:
        if archive.is_dir() and {entry.name for entry in archive.iterdir()} <= _SETUP_FILES:
            shutil.rmtree(archive)
    except OSError as exc:
        log.debug("left %s: %s", archive, exc)


async def _run_in_archive(
    config: Config,
    hooks: Hooks,
    install_signals: bool,
    show_progress: bool,
    mode: Mode,
    seed_requisites: Sequence[tuple[str, str]] | None,
) -> Crawl:
    """The crawl of `run_crawl` once its archive is locked."""
    archive = prepare_archive(config)
    crawler = Crawler(config, hooks, make_frontier(config, archive, hooks), archive, seed_requisites)
    crawler.crawl.mode = mode
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_quiet_when_exhausted)
    installed = []
    if install_signals and threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):

            def on_signal(signum: int = signum) -> None:
                again, crawler.crawl.signal = crawler.crawl.interrupted, signum
                _tell(
                    "second interrupt: cancelling the fetches in flight"
                    if again
                    else f"stopping: finishing in-flight fetches (up to {GRACE_SECONDS:.0f} s)"
                )
                crawler.stop(force=again)

            loop.add_signal_handler(signum, on_signal)
            installed.append(signum)
    bar = asyncio.create_task(_progress(crawler)) if show_progress else None
    try:
        return await crawler.run()
    finally:
        if bar is not None:
            bar.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await bar
        for signum in installed:
            loop.remove_signal_handler(signum)


def _first_archiver_error(group: BaseExceptionGroup[Any]) -> ArchiverError | None:
    """The first user-facing error of a task group's failures (the others follow from it)."""
    for member in group.exceptions:
        if isinstance(member, ArchiverError):
            return member
        if isinstance(member, BaseExceptionGroup):
            found = _first_archiver_error(member)
            if found is not None:
                return found
    return None


def _quiet_when_exhausted(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's report of an error nobody awaited, unless it is the full disk or the spent
    file limit the crawl is already stopping on (said once, in one line, at the end)."""
    error = context.get("exception")
    if isinstance(error, BaseException) and exhausted(error) is not None:
        log.debug("%s: %s", context.get("message"), error)
        return
    loop.default_exception_handler(context)


def _tell(message: str) -> None:
    """A line for the person who pressed Ctrl-C, on stderr as the docs show it (no logger
    prefix); not under -q or --json, which keep stderr for errors."""
    if logging.getLogger("archiver").isEnabledFor(logging.WARNING):
        click.echo(message, err=True)


async def _progress(crawler: Crawler) -> None:
    """The progress display; a fault of its own ends the display, never the crawl."""
    from rich.console import Console

    from .progress import show_progress

    try:
        await show_progress(crawler.crawl, crawler.frontier, Console(stderr=True), crawler.limiter)
    except Exception as exc:  # the crawl goes on, its report and exit code its own
        log.warning("progress display stopped: %s", exc)


def make_frontier(config: Config, archive: Path, hooks: Hooks | None = None) -> Frontier:
    """The frontier `config.frontier` names: a plugin's (`make_frontier` hook), else the core's
    'memory' or 'sqlite' (in the archive)."""
    frontier = hooks.make_frontier(config, archive) if hooks is not None else None
    if frontier is not None:
        return frontier
    if config.frontier == "memory":
        return MemoryFrontier()
    if config.frontier == "sqlite":
        return SqliteFrontier(archive / STATE_NAME)
    raise ConfigError(
        f"frontier {config.frontier!r}: no plugin provides it (`archiver plugins` lists those loaded)"
    )


def crawl_and_report(
    config: Config, *, quiet: bool, as_json: bool, again: str, mode: Mode = "crawl"
) -> Crawl:
    """Run the crawl `config` describes, print its report, exit 128 + signal when interrupted.

    `again` says how to go on after an interruption ("resume into ARCHIVE").
    """
    pm = make_plugin_manager(disabled=config.disable, modules=config.enable)
    bar = not (quiet or as_json) and sys.stderr.isatty()
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            crawl = runner.run(run_crawl(config, pm, install_signals=True, show_progress=bar, mode=mode))
    except Exception as exc:
        cause = exhausted(exc)
        if cause is not None:
            command = f"archiver crawl --{'update' if mode == 'update' else 'resume'} {config.output}"
            raise ArchiveError(exhausted_message(cause, config.output, command)) from None
        if isinstance(exc, BaseExceptionGroup):
            first = _first_archiver_error(exc)
            if first is not None:
                raise first from None
        raise
    report = build_report(crawl)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif not quiet:
        echo(human_summary(report))
    if crawl.interrupted:
        signum = crawl.signal or signal.SIGINT
        if quiet or as_json:
            pass
        elif crawl.complete and crawl.left_to_do:  # every page fetched: the same command does nothing
            for unfinished in crawl.left_to_do:
                click.echo(f"Interrupted after the last page: {unfinished}.", err=True)
        else:
            click.echo(f"Interrupted: run the same command again to {again}.", err=True)
        sys.exit(128 + int(signum))
    if crawl.limit is not None and not crawl.complete:
        if not quiet and not as_json:
            command = f"archiver crawl --{'update' if mode == 'update' else 'resume'} {config.output}"
            remedy = limit_remedy(crawl.limit, command)
            if remedy is None:
                click.echo(f"{stop_words(crawl.limit)}. Run the same command again to {again}.", err=True)
            else:
                click.echo(f"{stop_words(crawl.limit)}; {remedy}.", err=True)
        sys.exit(LIMIT_EXIT_CODE)
    return crawl


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (the `speed` extra), else asyncio's.

    uvloop does the loop's own work (polling, timers, socket writes) in C: the crawl
    spends less CPU per page.  ARCHIVER_LOOP=asyncio forces the standard loop (to compare,
    or to rule uvloop out when debugging); ARCHIVER_LOOP=uvloop insists on uvloop.
    """
    wanted = os.environ.get("ARCHIVER_LOOP", "auto").strip().lower() or "auto"
    if wanted not in ("auto", "asyncio", "uvloop"):
        raise UsageError(f"ARCHIVER_LOOP={wanted!r}: expected auto, asyncio or uvloop")
    if wanted == "asyncio":
        return None
    try:
        # Imported by name: an optional extra, absent from most type-checking environments.
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        if wanted == "uvloop":
            raise UsageError("ARCHIVER_LOOP=uvloop but uvloop is not installed") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def human_summary(report: dict[str, Any]) -> str:
    classes = ", ".join(f"{k} {v}" for k, v in report["by_status_class"].items()) or "none"
    lines = [
        f"Crawled {plural(report['pages'], 'page')} ({size(report['bytes'])})"
        f" in {report['wall_seconds']:.1f} s ({report['pages_per_second']:.0f} pages/s);"
        f" {report['failed']} failed, {plural(report['redirects'], 'redirect')}.",
        f"Status: {classes}.",
    ]
    if report.get("not_modified"):
        lines.append(
            f"Not modified since the last crawl: {report['not_modified']} (304; the stored copy stands)."
        )
    for label, key in (("Errors", "errors_by_kind"), ("Skipped", "skipped_by_reason")):
        if report[key]:
            lines.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in report[key].items()) + ".")
    after = report.get("after_crawl")
    if after:
        caught = ", ".join(f"{name} caught up {plural(n, 'page')}" for name, n in after["caught_up"].items())
        total = report["wall_seconds"] + after["seconds"]
        lines.append(f"Then {caught} in {after['seconds']:.1f} s ({total:.1f} s in all).")
    lines.append(f"Archive: {report['archive']} ({REPORT_NAME}, {CRAWL_LOG_NAME}).")
    return "\n".join(lines)
