"""Running a crawl into an archive that already holds one: resume it, or say it is done.

Two moments matter.  Before the run (`plan_run`, from the CLI): a complete archive is
left alone unless `--recrawl`, an interrupted one is resumed, a running one refused.
At the start of the run (`reconcile`, from the crawler, after the plugins' own
recovery in `crawl_started`): the URLs that were in flight when the last run stopped
are looked up through the `archived_pages` hook (the WARC plugin answers it).  Those
whose response is archived whole were killed between the WARC write and the frontier's
"done"; they are marked done from the WARC, and the links of the stored response are
queued as the lost run would have queued them, so nothing is fetched twice and nothing
is missed.  The others are fetched again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from .archive import CONFIG_NAME
from .config import Config, load_config
from .decode import choose_encoding, decode_content, is_textual
from .errors import ArchiveLockedError, UsageError
from .frontier import Item
from .frontier_sqlite import STATE_NAME, SqliteFrontier
from .model import Page
from .status import COMPLETE, NEW, NOT_RESUMABLE, RESUMABLE, RUNNING, archive_status
from .urls import canonical_key

if TYPE_CHECKING:
    from .crawler import Crawler

log = logging.getLogger(__name__)


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
    if config.frontier.startswith(("redis://", "rediss://")):
        return True, ""  # the shared crawl's state is in Redis: running again rejoins it
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
    since = min(r.taken_at for r in recovered.values())
    urls = [r.item.url for r in recovered.values()]
    found: dict[str, Page] = {}
    for stored in await crawler.hooks.archived_pages(urls, since, crawl):
        key = canonical_key(stored.url)
        if key in recovered and key not in found:
            found[key] = stored
    logged = await asyncio.to_thread(logged_urls, crawler.log.path, {recovered[k].item.url for k in found})
    for key, stored in found.items():
        item = recovered[key].item
        page = await stored_page(stored, item, crawler.config)
        await crawler.follow_stored(item, page, log_it=item.url not in logged)
    marked = await frontier.mark_done(found)
    crawl.stats["resume_from_warc"] += marked
    log.warning(
        "resuming: %d URLs were in flight; %d already archived (not fetched again), %d fetched again",
        len(recovered),
        marked,
        len(recovered) - marked,
    )
    return marked


def logged_urls(path: Path, urls: set[str]) -> set[str]:
    """Which of `urls` already have a line in the crawl log at `path`.

    Every line starts with its URL (``{"url": ...``), so only that string is decoded.
    """
    found: set[str] = set()
    if not urls or not path.is_file():
        return found
    decoder = json.JSONDecoder()
    start = len('{"url": ')
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                url, _ = decoder.raw_decode(line, start)
            except ValueError:
                continue
            if url in urls:
                found.add(url)
    return found


async def stored_page(stored: Page, item: Item, config: Config) -> Page:
    """`stored` (status, headers, body as archived) made whole for link extraction: decoded
    content, charset, redirect target; the crawl item's depth, referrer and kind."""
    page = dataclasses.replace(stored, url=item.url, depth=item.depth, referrer=item.referrer, kind=item.kind)
    decoded = await asyncio.to_thread(
        decode_content,
        page.body,
        page.header("Content-Encoding"),
        config.max_decoded_size,
        config.max_decompression_ratio,
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
        redirect_to=urljoin(item.url, location.strip()) if location is not None else None,
    )
