"""Answering a resumed crawl: which interrupted URLs already have a whole response on disk.

A crawl killed between writing a page's records and marking its URL done would fetch
it again and store a second capture.  The core asks (`archived_pages` hook) with the
URLs that were in flight; only files changed since the oldest of them was taken can
hold their records, so an archive of many files is not read again.  `crawl_started`
has already cut any ``.open`` file back to its last whole record, so what is found
here is whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archiver.api import WARC_FOLDER, ArchiveError, Crawl, Page, hookimpl

if TYPE_CHECKING:
    from ..archive_reader.reader import StoredResponse

# The plugin package imports this module for its hook whenever the command line starts;
# the WARC reader (warcio, decoders) is imported only when a resumed crawl asks.

MTIME_SLACK = 2.0
"""Seconds allowed for file-system timestamp granularity and clock steps."""


@hookimpl
async def archived_pages(urls: Sequence[str], since: float, crawl: Crawl) -> list[Page]:
    import asyncio

    from archiver.api import read_history

    # An earlier crawl's captures (--recrawl, --update) are not this crawl's, however recent
    started = next((run.started for run in read_history(crawl.archive) if run.number == crawl.number), None)
    floor = started.timestamp() if started is not None else None
    return await asyncio.to_thread(find_archived, crawl.archive / WARC_FOLDER, urls, since, floor)


def find_archived(
    folder: Path, urls: Sequence[str], since: float, crawl_started: float | None = None
) -> list[Page]:
    """A `Page` for each of `urls` with a response or revisit stored at or after `since`
    (and not before `crawl_started`, when the crawl that stored it began)."""
    from archiver.api import canonical_key

    from ..archive_reader.cdxj import WARC_SUFFIXES
    from ..archive_reader.reader import WarcArchive, open_archive

    if not urls or not folder.is_dir():
        return []
    wanted = {canonical_key(url) for url in urls}
    since -= MTIME_SLACK
    names = tuple(
        p.name
        for p in sorted(folder.iterdir())
        if p.name.endswith(WARC_SUFFIXES) and p.stat().st_mtime >= since
    )
    if not names:
        return []
    recent = WarcArchive(folder, only=names)
    whole: WarcArchive | None = None
    floor = since if crawl_started is None else max(since, crawl_started)
    not_before = time.strftime("%Y%m%d%H%M%S", time.gmtime(floor))
    found: dict[str, Page] = {}
    for capture in recent.iter_captures():
        if capture.status is None or capture.timestamp < not_before:
            continue  # no HTTP response (metadata), or an earlier crawl's capture (--recrawl)
        key = canonical_key(capture.url)
        if key not in wanted or key in found:
            continue
        try:
            stored = recent.read(capture)
        except ArchiveError:
            if not capture.is_revisit:
                raise
            whole = whole or open_archive(folder)  # the original lies in an older file
            stored = whole.read(capture)
        found[key] = _page(stored)
    return list(found.values())


def _page(stored: StoredResponse) -> Page:
    return Page(
        url=stored.url,
        status=stored.status or 0,
        reason=stored.reason,
        headers=tuple(stored.headers),
        body=stored.payload,
        truncated=stored.truncated,
    )
