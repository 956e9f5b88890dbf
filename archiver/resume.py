"""Running a crawl into an archive that already holds one: resume it, or say it is done.

Two moments matter.  Before the run (`plan_run`, from the CLI): a complete archive is
left alone unless `--recrawl`, an interrupted one is resumed, a running one refused.
At the start of the run (`reconcile`, from the crawler, after the plugins' own
recovery in `crawl_started`): the URLs that were in flight when the last run stopped
are looked up in the WARC files.  Those whose response is archived whole were killed
between the WARC write and the frontier's "done"; they are marked done from the WARC,
and the links of the stored response are queued as the lost run would have queued
them, so nothing is fetched twice and nothing is missed.  The others are fetched again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from .archive import CONFIG_NAME
from .config import Config, load_config
from .decode import choose_encoding, decode_content, is_textual
from .errors import ArchiveError, ArchiveLockedError, UsageError
from .frontier_sqlite import STATE_NAME, Recovered, SqliteFrontier
from .model import Page
from .status import COMPLETE, NEW, NOT_RESUMABLE, RESUMABLE, RUNNING, archive_status
from .urls import canonical_key

if TYPE_CHECKING:
    from .crawler import Crawler

log = logging.getLogger(__name__)

MTIME_SLACK = 5.0
"""Seconds of clock granularity allowed when choosing the WARC files a record may be in."""
WARC_READER = "archiver_plugins.warc.reader"
WARC_WRITER_KEY = "warc.writer"


# -- before the run ------------------------------------------------------------------------


def resumed_config(archive: Path, overrides: Mapping[str, Any]) -> Config:
    """The configuration saved in `archive`, with the command line's options on top."""
    saved = archive / CONFIG_NAME
    if not saved.is_file():
        raise UsageError(f"{archive} has no {CONFIG_NAME}: nothing to resume")
    return load_config(saved, {**overrides, "output": str(archive)})


def plan_run(config: Config, *, recrawl: bool = False) -> tuple[bool, str]:
    """Whether to run a crawl into `config.output`, and what to tell the user about it.

    Raises `ArchiveLockedError` when another process is crawling into it.
    """
    archive = Path(config.output)
    status = archive_status(archive)
    if status.state == RUNNING:
        who = status.holder.describe() if status.holder else "another process"
        raise ArchiveLockedError(f"{archive} is being written by {who}; wait for it or stop it first")
    if status.state == NEW:
        return True, ""
    if recrawl:
        for suffix in ("", "-wal", "-shm"):
            (archive / (STATE_NAME + suffix)).unlink(missing_ok=True)
        return True, f"Crawling {archive} again from its roots (--recrawl); earlier WARC files are kept."
    c = status.counts
    if status.state == COMPLETE:
        totals = f" ({c.done} done, {c.failed} failed)" if status.frontier == "sqlite" else ""
        return False, (
            f"{archive} holds a complete crawl{totals}: nothing to do. Use --recrawl to crawl it again."
        )
    if status.state == RESUMABLE:
        if config.frontier != "sqlite":
            raise UsageError(
                f"{archive} holds an interrupted crawl kept in SQLite; resume it with --frontier sqlite"
                " (or start over with --recrawl)"
            )
        return True, (
            f"Resuming the crawl in {archive}: {c.done} done, {c.failed} failed,"
            f" {c.queued + c.in_flight} to fetch."
        )
    assert status.state == NOT_RESUMABLE
    raise UsageError(
        f"{archive} holds an interrupted crawl that kept no state (memory frontier);"
        " use --recrawl to crawl it again from its roots, or choose another folder"
    )


# -- at the start of the run -----------------------------------------------------------------


async def reconcile(crawler: Crawler) -> int:
    """Mark done the interrupted URLs whose responses are archived whole; return how many."""
    frontier = crawler.frontier
    if not isinstance(frontier, SqliteFrontier) or not frontier.recovered:
        return 0
    crawl = crawler.crawl
    recovered = {r.key: r for r in frontier.recovered}
    crawl.stats["resume_in_flight"] += len(recovered)
    if WARC_WRITER_KEY not in crawl.extra:
        log.info(
            "%d URLs were in flight; no WARC writer in this run, so all are fetched again", len(recovered)
        )
        return 0
    folder = crawler.archive / "warc"
    since = min(r.taken_at for r in recovered.values()) - MTIME_SLACK
    found = await asyncio.to_thread(archived_responses, folder, recovered, since)
    for key, stored in found:
        item = recovered[key].item
        page = stored_page(stored, item.url, item.depth, item.referrer, item.kind, crawler.config)
        await crawler.follow_stored(item, page)
    marked = await frontier.mark_done(key for key, _ in found)
    crawl.stats["resume_from_warc"] += marked
    if recovered:
        log.warning(
            "resuming: %d URLs were in flight; %d found whole in the WARC files (not fetched again),"
            " %d fetched again",
            len(recovered),
            marked,
            len(recovered) - marked,
        )
    return marked


def archived_responses(folder: Path, wanted: Mapping[str, Recovered], since: float) -> list[tuple[str, Any]]:
    """(key, stored response) for each wanted URL with a whole response in a WARC file
    changed since `since`.  Blocking: run it in a thread."""
    if not folder.is_dir():
        return []
    reader: Any = importlib.import_module(WARC_READER)
    names = tuple(
        p.name
        for p in sorted(folder.iterdir())
        if p.name.endswith((".warc.gz", ".warc", ".warc.gz.open", ".warc.open"))
        and p.stat().st_mtime >= since
    )
    if not names:
        return []
    recent = reader.WarcArchive(folder, only=names)
    everything = None
    found: dict[str, Any] = {}
    not_before = time.strftime("%Y%m%d%H%M%S", time.gmtime(since))
    for capture in recent.iter_captures():
        if capture.status is None:  # metadata or resource: no HTTP response
            continue
        if capture.timestamp < not_before:  # an earlier crawl's capture (--recrawl)
            continue
        key = canonical_key(capture.url)
        if key not in wanted or key in found:
            continue
        try:
            found[key] = recent.read(capture)
        except ArchiveError:
            if not capture.is_revisit:
                raise
            # A revisit whose original lies in an older file: look in the whole archive.
            everything = everything or reader.open_archive(folder)
            found[key] = everything.read(capture)
    return list(found.items())


def stored_page(
    stored: Any,
    url: str,
    depth: int,
    referrer: str | None,
    kind: Any,
    config: Config,
) -> Page:
    """A `Page` rebuilt from an archived response, for link extraction (never archived again)."""
    page = Page(
        url=url,
        status=stored.status or 0,
        reason=stored.reason,
        headers=tuple(stored.headers),
        body=stored.payload,
        depth=depth,
        referrer=referrer,
        kind=kind,
        truncated=stored.truncated,
    )
    decoded = decode_content(
        page.body, page.header("Content-Encoding"), config.max_decoded_size, config.max_decompression_ratio
    )
    encoding = source = None
    if is_textual(page.content_type) or not page.content_type:
        encoding, source = choose_encoding(decoded.content, page.content_type, page.declared_charset)
    location = page.header("Location") if 300 <= page.status < 400 else None
    return dataclasses.replace(
        page,
        content=decoded.content,
        decode_error=decoded.error,
        encoding=encoding,
        encoding_source=source,
        redirect_to=urljoin(url, location.strip()) if location is not None else None,
    )
