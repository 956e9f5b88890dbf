"""What a plugin or a script may use: every name here keeps its meaning across versions.

A plugin imports from here (``from archiver.api import hookimpl, Page``) and its tests from
`archiver.testing`; any other module of ``archiver`` is an implementation detail that may
change.  The bundled plugins import nothing else of the core, so this module is the whole
surface a plugin needs: the hook marker and the records hooks receive, the errors, the
configuration and plugin settings, the archive's layout and the reading of its files (lock,
history, status, report, crawl log), content decoding, URLs, the frontier protocol, the crawl
runner, and the terminal helpers of commands.

Every plugin imports this module when any ``archiver`` command starts, so only the records and
the layout are imported with it; every other name (the configuration, the decoders, the
frontier, which pulls in asyncio, the engine, which pulls in aiohttp) is imported when first
used, through the same `lazy_attributes` a plugin may use for its own heavy modules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import (
    ArchiveError,
    ArchiveLockedError,
    ArchiverError,
    ConfigError,
    FetchError,
    FrontierUnreachable,
    LoginError,
    SeedError,
    UsageError,
    check_writable,
    exhausted,
)
from .hookspecs import PLUGIN_SETTINGS, FetchRequisite, hookimpl
from .layout import (
    CONFIG_NAME,
    CONTROL_NAME,
    COOKIES_NAME,
    CRAWL_FOLDERS,
    CRAWL_LOG_NAME,
    DEDUP_NAME,
    HISTORY_NAME,
    INDEX_FOLDER,
    LOCK_NAME,
    QA_FOLDER,
    REPORT_NAME,
    ROBOTS_LOG_NAME,
    STATE_NAME,
    UPDATE_NAME,
    WARC_FOLDER,
    warc_folder,
)
from .manager import Hooks, make_plugin_manager, plugin_versions
from .model import (
    HTML_TYPES,
    XML_TYPES,
    Counts,
    Crawl,
    Headers,
    Link,
    LinkKind,
    Page,
    SharedIdentity,
    find_header,
)
from .stash import Stash, StashKey
from .units import plural, size

if TYPE_CHECKING:
    from .archive import dump_toml, require_archive, saved_config, write_private
    from .commands import add_crawl_option, json_option, output_options, plugin_options
    from .config import SECTIONS, Config, current_tables, flatten_tables, load_config
    from .crawllog import build_report, status_class
    from .credentials import login_of, unredacted_secrets
    from .decode import Decoded, choose_encoding, decode_content, decode_stored, is_textual, known_codec
    from .frontier import Frontier, Holding, Item, Recovered
    from .history import CrawlRun, read_history
    from .history_lines import history_json
    from .lock import is_locked, read_holder
    from .politeness import DEFAULT_DELAY, HELD_SECONDS, HostLimiter, configured_delay
    from .queue_view import view_lines
    from .runner import crawl_and_report, loop_factory, run_crawl
    from .settings import parse_settings, patterns_problem, setting
    from .sqlchunks import in_chunks
    from .state import read_counts
    from .status import (
        COMPLETE,
        NEW,
        NOT_RESUMABLE,
        RESUMABLE,
        RUNNING,
        ArchiveStatus,
        archive_status,
        count_rows,
        with_queue,
    )
    from .terminal import echo, note, printable, setup_logging
    from .urls import canonical_key, site_of

__all__ = [
    "COMPLETE",
    "CONFIG_NAME",
    "CONTROL_NAME",
    "COOKIES_NAME",
    "CRAWL_FOLDERS",
    "CRAWL_LOG_NAME",
    "DEDUP_NAME",
    "DEFAULT_DELAY",
    "HELD_SECONDS",
    "HISTORY_NAME",
    "HTML_TYPES",
    "INDEX_FOLDER",
    "LOCK_NAME",
    "NEW",
    "NOT_RESUMABLE",
    "PLUGIN_SETTINGS",
    "QA_FOLDER",
    "REPORT_NAME",
    "RESUMABLE",
    "ROBOTS_LOG_NAME",
    "RUNNING",
    "SECTIONS",
    "STATE_NAME",
    "UPDATE_NAME",
    "WARC_FOLDER",
    "XML_TYPES",
    "ArchiveError",
    "ArchiveLockedError",
    "ArchiveStatus",
    "ArchiverError",
    "Config",
    "ConfigError",
    "Counts",
    "Crawl",
    "CrawlRun",
    "Decoded",
    "FetchError",
    "FetchRequisite",
    "Frontier",
    "FrontierUnreachable",
    "Headers",
    "Holding",
    "Hooks",
    "HostLimiter",
    "Item",
    "Link",
    "LinkKind",
    "LoginError",
    "Page",
    "Recovered",
    "SeedError",
    "SharedIdentity",
    "Stash",
    "StashKey",
    "UsageError",
    "__version__",
    "add_crawl_option",
    "archive_status",
    "build_report",
    "canonical_key",
    "check_writable",
    "choose_encoding",
    "configured_delay",
    "count_rows",
    "crawl_and_report",
    "current_tables",
    "decode_content",
    "decode_stored",
    "dump_toml",
    "echo",
    "exhausted",
    "find_header",
    "flatten_tables",
    "history_json",
    "hookimpl",
    "in_chunks",
    "is_locked",
    "is_textual",
    "json_option",
    "known_codec",
    "lazy_attributes",
    "load_config",
    "login_of",
    "loop_factory",
    "make_plugin_manager",
    "note",
    "output_options",
    "parse_settings",
    "patterns_problem",
    "plugin_options",
    "plugin_versions",
    "plural",
    "printable",
    "read_counts",
    "read_history",
    "read_holder",
    "require_archive",
    "run_crawl",
    "saved_config",
    "setting",
    "setup_logging",
    "site_of",
    "size",
    "status_class",
    "unredacted_secrets",
    "view_lines",
    "warc_folder",
    "with_queue",
    "write_private",
]

_LAZY = {
    "dump_toml": ".archive",
    "write_private": ".archive",
    "require_archive": ".archive",
    "saved_config": ".archive",
    "add_crawl_option": ".commands",
    "json_option": ".commands",
    "output_options": ".commands",
    "plugin_options": ".commands",
    "SECTIONS": ".config",
    "Config": ".config",
    "current_tables": ".config",
    "flatten_tables": ".config",
    "load_config": ".config",
    "build_report": ".crawllog",
    "status_class": ".crawllog",
    "unredacted_secrets": ".credentials",
    "login_of": ".credentials",
    "Decoded": ".decode",
    "choose_encoding": ".decode",
    "decode_content": ".decode",
    "decode_stored": ".decode",
    "is_textual": ".decode",
    "known_codec": ".decode",
    "Frontier": ".frontier",
    "Item": ".frontier",
    "Holding": ".frontier",
    "Recovered": ".frontier",
    "CrawlRun": ".history",
    "read_history": ".history",
    "history_json": ".history_lines",
    "is_locked": ".lock",
    "read_holder": ".lock",
    "DEFAULT_DELAY": ".politeness",
    "HELD_SECONDS": ".politeness",
    "HostLimiter": ".politeness",
    "configured_delay": ".politeness",
    "view_lines": ".queue_view",
    "crawl_and_report": ".runner",
    "loop_factory": ".runner",
    "run_crawl": ".runner",
    "parse_settings": ".settings",
    "patterns_problem": ".settings",
    "setting": ".settings",
    "in_chunks": ".sqlchunks",
    "read_counts": ".state",
    "COMPLETE": ".status",
    "NEW": ".status",
    "NOT_RESUMABLE": ".status",
    "RESUMABLE": ".status",
    "RUNNING": ".status",
    "ArchiveStatus": ".status",
    "archive_status": ".status",
    "count_rows": ".status",
    "with_queue": ".status",
    "echo": ".terminal",
    "printable": ".terminal",
    "note": ".terminal",
    "setup_logging": ".terminal",
    "canonical_key": ".urls",
    "site_of": ".urls",
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
