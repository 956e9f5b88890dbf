"""What a plugin or a script may use: every name here keeps its meaning across versions.

A plugin imports from here (``from archiver.api import hookimpl, Page``) and its tests from
`archiver.testing`; any other module of ``archiver`` is an implementation detail that may
change.  Every plugin imports this module when any ``archiver`` command starts, so the
configuration (`Config`, `load_config`, `setting`), the frontier protocol (`Frontier`,
which pulls in asyncio) and the engine (`run_crawl`, aiohttp) are imported when first used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
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
from .units import plural, size

if TYPE_CHECKING:
    from .commands import add_crawl_option, json_option
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
    "add_crawl_option",
    "hookimpl",
    "json_option",
    "lazy_attributes",
    "load_config",
    "make_plugin_manager",
    "plugin_versions",
    "plural",
    "run_crawl",
    "setting",
    "size",
]

_LAZY = {
    "add_crawl_option": ".commands",
    "json_option": ".commands",
    "Config": ".config",
    "load_config": ".config",
    "setting": ".settings",
    "Frontier": ".frontier",
    "Item": ".frontier",
    "Recovered": ".frontier",
    "run_crawl": ".runner",
}


def lazy_attributes(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A PEP 562 module ``__getattr__`` that imports each of `names` (name -> module, relative
    to `module`'s package) when it is first used.

    Every command line imports every plugin, so a plugin that needs a heavy library (a
    parser, a compressor) keeps it out of ``archiver --help`` with
    ``__getattr__ = lazy_attributes(__name__, {"Reader": ".reader"})``.
    """

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        namespace = sys.modules[module].__dict__
        value = namespace[name] = getattr(importlib.import_module(source, namespace["__package__"]), name)
        return value

    return __getattr__


__getattr__ = lazy_attributes(__name__, _LAZY)
