"""An example archiver plugin: content types of a crawl, and extensions it should skip.

It shows each kind of hook once:

* ``configure``: validate the ``[plugins.content_types]`` table before the crawl starts;
* ``accept_url`` (a question, must be sync): refuse URLs ending in a skipped extension;
* ``crawl_started`` / ``page_fetched`` / ``crawl_finished`` (notifications, may be async):
  count the pages by content type and write ``ARCHIVE/content-types.json`` at the end,
  with the blocking file write moved off the event loop;
* ``register_commands``: add ``archiver content-types ARCHIVE`` to print that file.

Install it next to archiver (``pip install -e examples/archiver-example-plugin``) and it
runs on every crawl; ``archiver plugins`` lists it.  It imports only `archiver.api`, and its
tests (``tests/``) only `archiver.testing`, whose fixtures pytest finds by itself.
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archiver.api import StashKey, UsageError, hookimpl, setting

if TYPE_CHECKING:
    from archiver.api import Config, Crawl, Link, Page

NAME = "content_types"
REPORT = "content-types.json"
COUNTS = StashKey[collections.Counter[str]]()
"""Pages per content type of the running crawl: this plugin's per-run object."""


def _extensions(extensions: tuple[str, ...]) -> str | None:
    wrong = [item for item in extensions if not item.startswith(".")]
    return f"expected extensions like '.iso', got {wrong[0]!r}" if wrong else None


@dataclass(frozen=True)
class Settings:
    """The ``[plugins.content_types]`` table; archiver checks each key and value against it."""

    skip_extensions: tuple[str, ...] = setting((".iso", ".dmg"), check=_extensions)
    """URLs whose path ends with one of these, in any case, are not fetched."""


def skipped_extensions(config: Config) -> tuple[str, ...]:
    """The `skip_extensions` setting, lower-cased; raises ConfigError naming a bad key or value."""
    return tuple(item.lower() for item in config.plugin_settings(NAME, Settings).skip_extensions)


@hookimpl
def configure(config: Config) -> None:
    """Fail before crawling when the table is wrong (the CLI prints one line, exit code 2)."""
    skipped_extensions(config)


@hookimpl
def accept_url(url: str, crawl: Crawl) -> bool | None:
    """False for a skipped extension; None (no opinion) otherwise, so other plugins decide."""
    path = url.split("?", 1)[0].split("#", 1)[0].lower()
    if path.endswith(skipped_extensions(crawl.config)):
        return False
    return None


@hookimpl
def crawl_started(crawl: Crawl) -> None:
    # Per-run state lives on the crawl, never in module globals: one process may run
    # several crawls (tests do).
    crawl.stash[COUNTS] = collections.Counter()


@hookimpl
def page_fetched(page: Page, links: Sequence[Link], crawl: Crawl) -> None:
    crawl.stash[COUNTS][page.content_type or "(none)"] += 1


@hookimpl
async def crawl_finished(crawl: Crawl) -> None:
    counts = crawl.stash.get(COUNTS, None)
    if counts is None:  # the crawl stopped before it started
        return
    text = json.dumps(dict(counts.most_common()), indent=2) + "\n"
    # A file write blocks: do it in a thread so the event loop keeps running.
    await asyncio.to_thread((crawl.archive / REPORT).write_text, text, encoding="utf-8")


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.command("content-types")
    @click.argument("archive", type=click.Path(path_type=Path))
    def content_types(archive: Path) -> None:
        """Pages per content type in ARCHIVE's last crawl."""
        report = archive / REPORT
        if not report.is_file():
            raise UsageError(f"{archive}: no {REPORT} (was the content_types plugin installed?)")
        for content_type, count in json.loads(report.read_text(encoding="utf-8")).items():
            click.echo(f"{count:8d}  {content_type}")
