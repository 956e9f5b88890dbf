"""Bundled plugin redis: one crawl shared by many processes, on any machines, through Redis.

A crawl started with ``archiver crawl URL -o ARCHIVE --frontier redis://HOST:PORT/DB
--crawl-id NAME`` keeps its frontier in Redis (frontier.py) and stores its configuration
there; ``[plugins.redis]`` (settings.py) holds the crawl's name and lease, and this plugin
adds ``--crawl-id`` to ``archiver crawl``.  ``archiver worker`` (worker.py) joins a crawl
from anywhere with its own archive folder; ``archiver status`` of a worker's archive
shows the whole crawl, and ``archiver merge`` takes the crawl's own totals from Redis
(shared.py).  The redis client is an optional extra (``pip install -e '.[redis]'`` in a clone),
imported only when Redis is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archiver.api import add_crawl_option, hookimpl

from .sharing import is_shared, require_redis, saved_shared_crawl

if TYPE_CHECKING:
    from archiver.api import ArchiveStatus, Config, Frontier


@hookimpl
def configure(config: Config) -> None:
    """`[plugins.redis]` checked even for a crawl that shares nothing: a typo is said at once."""
    from .settings import NAME, RedisSettings

    config.plugin_settings(NAME, RedisSettings)


@hookimpl
def make_frontier(config: Config, archive: Path) -> Frontier | None:
    if not is_shared(config.frontier):
        return None
    require_redis()
    from .frontier import RedisFrontier

    return RedisFrontier(config)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from .worker import worker_command

    cli.add_command(worker_command)
    add_crawl_option(
        cli,
        "redis",
        "crawl_id",
        "--crawl-id",
        help="Name of a crawl shared by many processes (a Redis frontier).",
    )


@hookimpl
def archive_status(archive: Path, status: ArchiveStatus | None) -> None:
    if status is None or status.frontier == "sqlite":
        return
    tables = saved_shared_crawl(Path(archive))
    if tables is None:
        return
    require_redis()
    from .shared import shared_status

    shared_status(tables, status)


@hookimpl
def archive_merged(archive: Path, sources: Sequence[Path]) -> None:
    if not any(saved_shared_crawl(Path(source)) for source in sources):
        return
    require_redis()
    from .shared import merge_shared_totals

    merge_shared_totals(Path(archive), [Path(s) for s in sources])
