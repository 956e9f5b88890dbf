"""What a plugin or a script may use: every name here keeps its meaning across versions.

A plugin imports from here (``from archiver.api import hookimpl, Page``) and its tests from
`archiver.testing`; any other module of ``archiver`` is an implementation detail that may
change.  Every plugin imports this module when any ``archiver`` command starts, so the
configuration (`Config`, `load_config`, `setting`), the frontier protocol (`Frontier`,
which pulls in asyncio) and the engine (`run_crawl`, aiohttp) are imported when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ArchiveError,
    ArchiveLockedError,
    ArchiverError,
    ConfigError,
    FetchError,
    SeedError,
    UsageError,
)
from .hookspecs import PLUGIN_SETTINGS, FetchRequisite, hookimpl
from .manager import Hooks, make_plugin_manager, plugin_versions
from .model import Counts, Crawl, Headers, Link, LinkKind, Page
from .stash import Stash, StashKey

if TYPE_CHECKING:
    from .config import Config, load_config
    from .frontier import Frontier, Item, Recovered
    from .runner import run_crawl
    from .settings import setting

__all__ = [
    "PLUGIN_SETTINGS",
    "ArchiveError",
    "ArchiveLockedError",
    "ArchiverError",
    "Config",
    "ConfigError",
    "Counts",
    "Crawl",
    "FetchError",
    "FetchRequisite",
    "Frontier",
    "Headers",
    "Hooks",
    "Item",
    "Link",
    "LinkKind",
    "Page",
    "Recovered",
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

_LAZY = {
    "Config": ".config",
    "load_config": ".config",
    "setting": ".settings",
    "Frontier": ".frontier",
    "Item": ".frontier",
    "Recovered": ".frontier",
    "run_crawl": ".runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __package__), name)
    globals()[name] = value
    return value
