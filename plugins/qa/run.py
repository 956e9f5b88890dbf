"""One QA run: choose the pages, replay each in Chromium with N tabs, keep and sum up the results."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from archiver.api import ArchiveError, UsageError

from ..replay.library import Library
from .checker import (
    CheckSettings,
    PageCheck,
    PageToCheck,
    ReplayServer,
    Site,
    running_browser,
)
from .records import PageResult
from .results import RunWriter, Summary

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_CAPTURE_BYTES = 32 * 1024 * 1024
NO_FILE = "not loaded: the mirror has no file for this page"

Progress = Callable[[PageResult], None]


@dataclass(frozen=True)
class Selection:
    """Which archived pages a run checks."""

    pattern: re.Pattern[str] | None = None
    sample: int = 0
    urls: frozenset[str] | None = None
    """Exactly these pages (a patch checks again the pages it patched)."""


def archived_pages(library: Library, selection: Selection) -> list[tuple[str, str]]:
    """(url, timestamp) of the newest capture of each HTML page answered 200, sorted by URL.

    A newest capture that is a revisit (the same payload again) is the page as its original
    was: it is checked when that original is an HTML page."""
    found: list[tuple[str, str]] = []
    for handle in library.handles:
        for entries in handle.catalog().urls.values():
            for entry in entries:
                capture = entry.latest
                mime = capture.mime
                if capture.is_revisit and capture.status == 200:
                    originals = [
                        c
                        for c in handle.captures(entry.url)
                        if not c.is_revisit and c.status == 200 and c.timestamp <= capture.timestamp
                    ]
                    same = [c for c in originals if c.digest == capture.digest] or originals
                    mime = max(same, key=lambda c: c.timestamp).mime if same else None
                if mime not in HTML_TYPES or capture.status != 200:
                    continue
                if not entry.url.startswith(("http://", "https://")):
                    continue
                if selection.urls is not None and entry.url not in selection.urls:
                    continue
                if selection.pattern is not None and not selection.pattern.search(entry.url):
                    continue
                found.append((entry.url, capture.timestamp))
    found.sort()
    if selection.sample and selection.sample < len(found):
        found = sorted(random.sample(found, selection.sample))
    return found


def load_capture(library: Library, url: str, timestamp: str) -> PageToCheck:
    """The page with its capture-time screenshot and DOM, when the browser capture kept them."""
    handle = library.handles[0]
    reader = handle.reader()
    shot = dom = None
    if reader is not None:
        with contextlib.suppress(ArchiveError):
            found = reader.lookup(f"urn:screenshot:{url}", timestamp)
            if found is not None:
                shot = reader.read(found).content(MAX_CAPTURE_BYTES)
        with contextlib.suppress(ArchiveError):
            found = reader.lookup(f"urn:dom:{url}", timestamp)
            if found is not None:
                dom = reader.read(found).content(MAX_CAPTURE_BYTES).decode("utf-8", "replace")
    return PageToCheck(url, timestamp, shot, dom)


async def check_archive(
    archive: Path,
    executable: str,
    selection: Selection,
    *,
    tabs: int = 2,
    settings: CheckSettings | None = None,
    progress: Progress | None = None,
    started: Callable[[int], None] | None = None,
    export: Path | None = None,
) -> tuple[int, Summary]:
    """Check the selected pages of `archive`; returns the run's number and its summary.

    With `export`, the pages are those of that exported folder, opened from disk, and the
    results are not kept in the archive (run number 0): they describe the folder, not the archive.
    """
    library = Library.open([archive])
    pages = await asyncio.to_thread(archived_pages, library, selection)
    if not pages and selection.urls is None:
        raise UsageError(f"{archive}: no archived HTML page to check" + _filter_words(selection))
    site: Site
    if export is not None:
        from .export import ExportSite

        site = mirror = ExportSite(export, library)
        writer = None
    else:
        site = server = ReplayServer(library)
        await server.start()
        writer = RunWriter(archive)
        writer.start(len(pages))
    if started is not None:
        started(len(pages))
    summary = Summary()

    def done(result: PageResult) -> None:
        if writer is not None:
            writer.page(result)
        summary.add(result)
        if progress is not None:
            progress(result)

    try:
        async with running_browser(executable, site) as chromium:
            queue = iter(pages)
            check = settings or CheckSettings()

            async def tab() -> None:
                for url, timestamp in queue:
                    if export is not None and not mirror.has_page(url):
                        done(
                            PageResult(
                                url, timestamp, notes=["not loaded: the mirror has no file for this page"]
                            )
                        )
                        continue
                    capture = await asyncio.to_thread(load_capture, library, url, timestamp)
                    keep = writer.keep_screenshot if writer is not None else None
                    browser = await chromium.get()
                    done(await PageCheck(capture, site, check, chromium.compare, keep).run(browser))

            await asyncio.gather(*(tab() for _ in range(max(1, tabs))))
    finally:
        if export is None:
            await server.close()
    if writer is None:
        return 0, summary
    writer.finish(summary)
    return writer.number, summary


def _filter_words(selection: Selection) -> str:
    return f" matching {selection.pattern.pattern!r}" if selection.pattern is not None else ""
