"""`archiver worker`: one more process for a crawl shared through Redis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from archiver.api import UsageError, output_options, plugin_options

from .sharing import is_shared, require_redis

WAIT_SECONDS = 60.0
"""How long a worker waits by default for its crawl to appear: workers started by one script
with the crawl, or a moment before it, join instead of failing."""


@click.command("worker")
@click.option("--frontier", required=True, metavar="redis://HOST:PORT/DB", help="The crawl's Redis server.")
@click.option("--crawl-id", required=True, metavar="NAME", help="The name the crawl was started with.")
@click.option("-o", "--output", required=True, metavar="ARCHIVE", help="This worker's own archive folder.")
@click.option("--max-tasks", type=int, help="Concurrent fetches in this process (default: the crawl's).")
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=WAIT_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the crawl to be started, when it is not yet (0: fail at once).",
)
@plugin_options
@output_options
def worker_command(
    frontier: str,
    crawl_id: str,
    output: str,
    max_tasks: int | None,
    wait: float,
    plugins: Sequence[str],
    disabled: Sequence[str],
    verbose: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Join the crawl CRAWL-ID shared through a Redis frontier, writing into ARCHIVE.

    The crawl is started elsewhere with `archiver crawl URL --frontier redis://... --crawl-id
    NAME`; the worker reads its configuration from Redis, takes URLs until the whole crawl
    is done, and writes WARC files named after this host and process.  A worker started
    before its crawl waits for it (--wait).  Run it again after a crash to rejoin; combine
    the archives with `archiver merge`.
    """
    from archiver.api import crawl_and_report, setup_logging

    setup_logging(verbose, quiet or as_json)
    if not is_shared(frontier):
        raise UsageError(f"--frontier must be a redis:// URL, got {frontier!r}")
    require_redis()
    from .frontier import CrawlFinishedError
    from .shared import shared_config

    overrides: dict[str, Any] = {"output": output}
    if max_tasks is not None:
        overrides["max_tasks"] = max_tasks

    def waiting() -> None:
        if not (quiet or as_json):
            click.echo(f"Waiting up to {wait:g} s for crawl {crawl_id!r} to start...", err=True)

    config = shared_config(frontier, crawl_id, overrides, wait, waiting)
    config = config.replace(enable=(*config.enable, *plugins), disable=(*config.disable, *disabled))
    try:
        crawl_and_report(config, quiet=quiet, as_json=as_json, again=f"rejoin crawl {crawl_id!r}")
    except CrawlFinishedError:
        # Workers are often started in numbers by a script: one that comes after the
        # end has nothing to do and did nothing wrong.
        click.echo(f"Crawl {crawl_id!r} is finished: nothing left for this worker.", err=True)
