"""What a plugin or a script may use: every name here keeps its meaning across versions.

A plugin imports from here (``from archiver.api import hookimpl, Page``) and its tests from
`archiver.testing`; any other module of ``archiver`` is an implementation detail that may
change.  `run_crawl` is imported only when first used: the engine pulls in aiohttp, and a
plugin that imports this module must not slow the start of every ``archiver`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import Config, load_config
from .errors import (
    ArchiveError,
    ArchiveLockedError,
    ArchiverError,
    ConfigError,
    FetchError,
    SeedError,
    UsageError,
)
from .hookspecs import FetchRequisite, hookimpl
from .manager import Hooks, make_plugin_manager, plugin_versions
from .model import Crawl, Headers, Link, LinkKind, Page
from .settings import setting
from .stash import Stash, StashKey

if TYPE_CHECKING:
    from .runner import run_crawl

__all__ = [
    "PLUGIN_SETTINGS",
    "ArchiveError",
    "ArchiveLockedError",
    "ArchiverError",
    "Config",
    "ConfigError",
    "Crawl",
    "FetchError",
    "FetchRequisite",
    "Headers",
    "Hooks",
    "Link",
    "LinkKind",
    "Page",
    "SeedError",
    "Stash",
    "StashKey",
    "UsageError",
    "hookimpl",
    "load_config",
    "make_plugin_manager",
    "plugin_versions",
    "run_crawl",
    "setting",
]

PLUGIN_SETTINGS = "archiver.plugin_settings"
"""Key of ``click`` context ``meta`` where a plugin's option for ``archiver crawl`` stores its value:
``ctx.meta[PLUGIN_SETTINGS][NAME][KEY]`` overrides ``[plugins.NAME] KEY`` of the configuration."""


def __getattr__(name: str) -> Any:
    if name == "run_crawl":
        from .runner import run_crawl

        return run_crawl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
