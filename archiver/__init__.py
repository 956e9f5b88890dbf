"""archiver: archive whole websites to WARC, browse them offline, search them, extend them.

The names a plugin needs most are re-exported here; `archiver.api` holds the whole public API.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import ArchiveError, ArchiverError, ConfigError, FetchError, UsageError
from .hookspecs import hookimpl
from .model import Crawl, Link, LinkKind, Page

__all__ = [
    "ArchiveError",
    "ArchiverError",
    "ConfigError",
    "Crawl",
    "FetchError",
    "Link",
    "LinkKind",
    "Page",
    "UsageError",
    "__version__",
    "hookimpl",
]
