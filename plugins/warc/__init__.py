"""Bundled plugin warc: every HTTP exchange of a crawl archived as WARC/1.1.

Hooks here are thin: `configure` checks ``[plugins.warc]`` and registers a per-run
`WarcWriter` (writer.py); `register_commands` adds ``archiver warc check|ls``.
What other plugins read back goes through the archive reader (`archiver_plugins.archive_reader`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
import pluggy

from archiver.api import hookimpl, lazy_attributes

from .commands import register
from .recovery import archived_pages as archived_pages  # hook: answers a resumed crawl

if TYPE_CHECKING:
    from archiver.api import Config

    from .writer import WarcWriter

__all__ = ["WarcWriter"]

# Every command line loads this plugin; the writer (warcio, compressors) loads on first use.
_LAZY = {"WarcWriter": ".writer"}


__getattr__ = lazy_attributes(__name__, _LAZY)


WRITER_NAME = "warc-writer"
STORED_NAME = "warc-stored"


@hookimpl
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    from .settings import WarcSettings
    from .stored import UpdateLookup
    from .writer import WarcWriter

    settings = config.plugin_settings("warc", WarcSettings)
    for name in (WRITER_NAME, STORED_NAME):
        old = pm.get_plugin(name)
        if old is not None:
            pm.unregister(old)
    stored = UpdateLookup()
    pm.register(stored, name=STORED_NAME)
    pm.register(WarcWriter(settings, stored), name=WRITER_NAME)


@hookimpl
def register_commands(cli: click.Group) -> None:
    register(cli)


@hookimpl(tryfirst=True)
def archive_merged(archive: Path, sources: Sequence[Path], copy: bool) -> dict[str, int | str]:
    """Link (or copy) the sources' WARC files, close those a killed crawl left open, index them."""
    from .merge import merge_warcs

    return merge_warcs(Path(archive), [Path(s) for s in sources], copy)
