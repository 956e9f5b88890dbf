"""Full-text search over everything archived: the `index` plugin.

During a crawl, every successful HTML or plain-text page goes to a writer process that
keeps a tantivy index in ``ARCHIVE/index/``; ``archiver search`` queries it (also while
the crawl runs) and ``archiver reindex`` rebuilds it from WARC files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver.api import StashKey, hookimpl

if TYPE_CHECKING:
    import click
    import pluggy

    from archiver.api import Config, Crawl, Link, Page

    from .feeder import IndexFeeder
    from .settings import IndexSettings

# Every command line loads this plugin: tantivy, whoosh, selectolax and asyncio are imported by the
# hooks that use them (once a crawl starts), not here.

FEEDER_KEY: StashKey[IndexFeeder] = StashKey()
"""The running crawl's feeder, set by `crawl_started`."""


def parse_options(table: Mapping[str, Any]) -> IndexSettings:
    """`[plugins.index]` checked; a typo or a bad value names the key."""
    from archiver.api import parse_settings

    from .settings import IndexSettings

    return parse_settings("index", IndexSettings, table)


def capture_time(page: Page) -> str:
    """14-digit UTC time, truncated to the second like WARC-Date and CDXJ timestamps."""
    fetched = page.fetched_at
    if fetched.tzinfo is not None:
        fetched = fetched.astimezone(UTC)
    return fetched.strftime("%Y%m%d%H%M%S")


@hookimpl
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    from .settings import IndexSettings

    config.plugin_settings("index", IndexSettings)


@hookimpl(trylast=True)  # after the WARC writer closed the files a killed run left open
async def crawl_started(crawl: Crawl) -> None:
    import asyncio

    from .feeder import IndexFeeder
    from .settings import IndexSettings

    archive = Path(crawl.archive)
    feeder = IndexFeeder(archive, crawl.config.plugin_settings("index", IndexSettings))
    if crawl.resumed:
        from .recover import bring_in_line

        crawl.stats["index.recovered"] = await asyncio.to_thread(bring_in_line, archive)
    await asyncio.to_thread(feeder.start)
    crawl.stash[FEEDER_KEY] = feeder
    crawl.stats["index.pending"] = feeder.lag


@hookimpl(trylast=True)  # after the WARC writer wrote the page: the spool refers to its record
async def page_fetched(page: Page, links: Sequence[Link], crawl: Crawl) -> None:
    feeder = crawl.stash.get(FEEDER_KEY, None)
    if feeder is None or page.unchanged:  # an update's unchanged page: indexed already
        return
    from ..markup.text import is_indexable
    from .lines import Stored
    from .store import Capture

    if is_indexable(page.status, page.content_type) and page.content:
        time = capture_time(page)
        whole = page.body and not page.truncated and not page.decode_error
        await feeder.put(
            Capture(
                url=page.url,
                time=time,
                status=page.status,
                content_type=page.content_type,
                encoding=page.encoding,
                content=page.content,
            ),
            Stored(page.request_target or page.url, time, page.status, page.body) if whole else None,
        )
        crawl.stats["index.queued"] += 1
    crawl.stats["index.pending"] = feeder.lag


@hookimpl
async def page_rendered(page: Page, dom: str, screenshot: bytes | None, crawl: Crawl) -> None:
    """The page as a browser showed it replaces its HTML in the index when its text is longer."""
    import asyncio

    feeder = crawl.stash.get(FEEDER_KEY, None)
    if feeder is None or not is_indexable_page(page):
        return
    from .store import Capture

    content = dom.encode("utf-8", "replace")
    if not await asyncio.to_thread(_says_more, content, page, feeder.options.max_chars):
        return
    await feeder.put(
        Capture(
            url=page.url,
            time=capture_time(page),
            status=page.status,
            content_type="text/html",
            encoding="utf-8",
            content=content,
        )
    )
    crawl.stats["index.rendered"] += 1


def is_indexable_page(page: Page) -> bool:
    from ..markup.text import is_indexable

    return is_indexable(page.status, page.content_type)


def _says_more(rendered: bytes, page: Page, max_chars: int) -> bool:
    from ..markup.text import extract

    before = extract(page.content, page.content_type, page.encoding, max_chars)
    after = extract(rendered, "text/html", "utf-8", max_chars)
    return len(after.text) + len(after.title) > len(before.text) + len(before.title)


@hookimpl
async def crawl_finished(crawl: Crawl) -> None:
    import asyncio

    feeder = crawl.stash.pop(FEEDER_KEY, None)
    if feeder is None:
        return
    interrupted = crawl.interrupted
    if "index.pending" in crawl.pending_at_end:  # the figure of the last page, made exact
        crawl.pending_at_end["index.pending"] = crawl.stats["index.pending"] = feeder.lag
    closing = asyncio.ensure_future(asyncio.to_thread(feeder.close, interrupted))
    while not closing.done():
        await asyncio.wait({closing}, timeout=0.25)
        crawl.stats["index.pending"] = lag = feeder.lag
        if crawl.interrupted and not interrupted:  # Ctrl-C while the index catches up
            interrupted = True
            feeder.stop_draining()
            crawl.finishing = "committing the index; the pages left wait for `archiver reindex --pending`"
        elif lag and not interrupted:
            crawl.finishing = (
                f"indexing {lag:,} pages... (Ctrl-C leaves them for `archiver reindex --pending`)"
            )
    crawl.finishing = ""
    await closing
    crawl.stats["index.pending"] = waiting = feeder.pending
    if interrupted and waiting:
        crawl.left_to_do.append(
            f"{waiting:,} {'page waits' if waiting == 1 else 'pages wait'} for the search index;"
            f" `archiver reindex --pending {crawl.archive}` indexes them"
        )
    if waiting and not interrupted and feeder.options.wait:
        # the catch-up stopped short (no space left): not complete, so `crawl --resume`,
        # which the crawl's message names, indexes the rest
        crawl.complete = False


@hookimpl
def archive_status(archive: Any) -> Iterable[tuple[str, Any]] | None:
    from .status import status_lines

    return status_lines(Path(archive))


@hookimpl
def archive_merged(archive: Any, sources: Sequence[Any]) -> None:
    """A merged archive's index is built from its merged WARC files, on every core: tantivy
    cannot join the segments of separate indexes from Python, and the WARC files are what
    decides which capture of a URL is the newest."""
    from .parallel import default_processes
    from .reindex import archive_warcs, reindex

    if archive_warcs(Path(archive)):
        reindex(Path(archive), processes=default_processes())


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .commands import reindex_command, search_command

    cli.add_command(search_command)
    cli.add_command(reindex_command)
