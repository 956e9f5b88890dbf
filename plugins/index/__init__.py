"""Full-text search over everything archived: the `index` plugin.

During a crawl, every successful HTML or plain-text page goes to a writer process that
keeps a whoosh index in ``ARCHIVE/index/``; ``archiver search`` queries it (also while
the crawl runs) and ``archiver reindex`` rebuilds it from WARC files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver.errors import ConfigError
from archiver.hookspecs import hookimpl

if TYPE_CHECKING:
    import click
    import pluggy

    from archiver.config import Config
    from archiver.model import Crawl, Link, Page

    from .feeder import IndexFeeder, Options

# Every command line loads this plugin: whoosh, selectolax and asyncio are imported by the
# hooks that use them (once a crawl starts), not here.

FEEDER_KEY = "index.feeder"

_KEYS: dict[str, tuple[type, float]] = {
    "batch_size": (int, 1),
    "batch_seconds": (float, 0.1),
    "queue_size": (int, 1),
    "max_chars": (int, 1000),
    "crawl_share": (float, 0.01),
    "wait": (bool, 0),
    "processes": (int, 1),
}
MAX_PROCESSES = 256


def parse_options(table: Mapping[str, Any]) -> Options:
    """Check `[plugins.index]`; a typo or a bad value names the key."""
    from .feeder import Options

    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "enabled":
            continue
        if key not in _KEYS:
            raise ConfigError(f"plugins.index: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
        kind, floor = _KEYS[key]
        if kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"plugins.index.{key}: expected true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"plugins.index.{key}: expected a number, got {value!r}")
        elif kind is int and not isinstance(value, int):
            raise ConfigError(f"plugins.index.{key}: expected a whole number, got {value!r}")
        elif value < floor:
            raise ConfigError(f"plugins.index.{key}: must be at least {floor}, got {value!r}")
        elif key == "crawl_share" and value > 1:
            raise ConfigError(f"plugins.index.{key}: a share of one CPU, at most 1, got {value!r}")
        elif key == "processes" and value > MAX_PROCESSES:
            raise ConfigError(f"plugins.index.{key}: at most {MAX_PROCESSES}, got {value!r}")
        values[key] = float(value) if kind is float else value
    return Options(**values)


def capture_time(page: Page) -> str:
    """14-digit UTC time, truncated to the second like WARC-Date and CDXJ timestamps."""
    fetched = page.fetched_at
    if fetched.tzinfo is not None:
        fetched = fetched.astimezone(UTC)
    return fetched.strftime("%Y%m%d%H%M%S")


@hookimpl
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    parse_options(config.plugin("index"))


@hookimpl(trylast=True)  # after the WARC writer closed the files a killed run left open
async def crawl_started(crawl: Crawl) -> None:
    import asyncio

    from .feeder import IndexFeeder

    archive = Path(crawl.archive)
    feeder = IndexFeeder(archive, parse_options(crawl.plugin_config("index")))
    if crawl.resumed:
        from .recover import bring_in_line

        crawl.stats["index.recovered"] = await asyncio.to_thread(bring_in_line, archive)
    await asyncio.to_thread(feeder.start)
    crawl.extra[FEEDER_KEY] = feeder
    crawl.stats["index.pending"] = feeder.lag


@hookimpl
async def page_fetched(page: Page, links: Sequence[Link], crawl: Crawl) -> None:
    feeder: IndexFeeder | None = crawl.extra.get(FEEDER_KEY)
    if feeder is None:
        return
    from .extract import is_indexable  # loaded by crawl_started: a lookup in sys.modules
    from .store import Capture

    if is_indexable(page.status, page.content_type) and page.content:
        await feeder.put(
            Capture(
                url=page.url,
                time=capture_time(page),
                status=page.status,
                content_type=page.content_type,
                encoding=page.encoding,
                content=page.content,
            )
        )
        crawl.stats["index.queued"] += 1
    crawl.stats["index.pending"] = feeder.lag


@hookimpl
async def crawl_finished(crawl: Crawl) -> None:
    import asyncio

    feeder: IndexFeeder | None = crawl.extra.pop(FEEDER_KEY, None)
    if feeder is None:
        return
    interrupted = crawl.interrupted
    closing = asyncio.ensure_future(asyncio.to_thread(feeder.close, interrupted))
    while not closing.done():
        await asyncio.wait({closing}, timeout=0.25)
        crawl.stats["index.pending"] = lag = feeder.lag
        if crawl.interrupted and not interrupted:  # Ctrl-C while the index catches up
            interrupted = True
            feeder.stop_draining()
            crawl.extra["finishing"] = (
                "committing the index; the pages left wait for `archiver reindex --pending`"
            )
        elif lag and not interrupted:
            crawl.extra["finishing"] = (
                f"indexing {lag:,} pages... (Ctrl-C leaves them for `archiver reindex --pending`)"
            )
    crawl.extra.pop("finishing", None)
    await closing
    crawl.stats["index.pending"] = feeder.pending


@hookimpl
def archive_status(archive: Any) -> Iterable[tuple[str, Any]] | None:
    from .status import status_lines

    return status_lines(Path(archive))


@hookimpl
def archive_merged(archive: Any, sources: Sequence[Any]) -> None:
    """A merged archive's index is its sources' indexes joined segment by segment (no page
    is analysed again); when a source has none, it is rebuilt from all the WARC files."""
    from .merge import merge_indexes
    from .parallel import default_processes
    from .reindex import archive_warcs, reindex

    if not archive_warcs(Path(archive)):
        return
    if merge_indexes(Path(archive), [Path(s) for s in sources]) is None:
        reindex(Path(archive), processes=default_processes())


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .commands import reindex_command, search_command

    cli.add_command(search_command)
    cli.add_command(reindex_command)
