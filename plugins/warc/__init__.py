"""Bundled plugin warc: every HTTP exchange of a crawl archived as WARC/1.1.

Hooks here are thin: `configure` checks ``[plugins.warc]`` and registers a per-run
`WarcWriter` (writer.py); `register_commands` adds ``archiver warc check|ls``.
The reader API other plugins use is in reader.py (`open_archive`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
import pluggy

from archiver.config import Config
from archiver.hookspecs import hookimpl

from .commands import register
from .reader import Capture, StoredResponse, WarcArchive, open_archive
from .recovery import archived_pages as archived_pages  # hook: answers a resumed crawl
from .settings import parse_settings
from .writer import WarcWriter

__all__ = ["Capture", "StoredResponse", "WarcArchive", "WarcWriter", "open_archive"]

WRITER_NAME = "warc-writer"


@hookimpl
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    settings = parse_settings(config.plugin("warc"))
    old = pm.get_plugin(WRITER_NAME)
    if old is not None:
        pm.unregister(old)
    pm.register(WarcWriter(settings), name=WRITER_NAME)


@hookimpl
def register_commands(cli: click.Group) -> None:
    register(cli)


@hookimpl(tryfirst=True)
def archive_merged(archive: Path, sources: Sequence[Path]) -> None:
    """Close the files a killed crawl left open and index any WARC file that has no CDXJ."""
    from .merge import finish_merged

    finish_merged(Path(archive) / "warc")
