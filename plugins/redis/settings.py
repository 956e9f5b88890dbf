"""The ``[plugins.redis]`` table, checked by the core (`archiver.settings`).

Older versions kept both keys in ``[crawl]``; the core still reads them there
(`archiver.config.MOVED`), so archives and crawls saved then keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from archiver.api import CONFIG_NAME, current_tables, parse_settings, setting

NAME = "redis"


@dataclass(frozen=True)
class RedisSettings:
    """Settings of a crawl shared through Redis; docs/distributed.md explains each one."""

    crawl_id: str = ""
    """The crawl's name in Redis; every worker of one crawl uses the same (--crawl-id)."""
    lease_seconds: float = setting(30.0, low=1, high=86_400)
    """How long a worker may hold a URL without renewing it before others take it back."""


def saved_settings(tables: Mapping[str, Any], source: str = CONFIG_NAME) -> RedisSettings:
    """The settings in configuration tables as saved (crawl.toml, Redis), in either layout."""
    plugins = current_tables(tables, source).get("plugins", {})
    table = plugins.get(NAME, {}) if isinstance(plugins, Mapping) else {}
    return parse_settings(NAME, RedisSettings, table if isinstance(table, Mapping) else {})
