"""The crawl's settings: defaults, then a TOML file, then the command line.

Every core key lives in one TOML table (`[crawl]`, `[limits]`, `[politeness]`,
`[plugins]`); plugins own `[plugins.NAME]`, declared as a dataclass (`archiver.settings`)
and read checked with `Config.plugin_settings` in their `configure` hook.
A typo is an error that names the key and the closest valid one, never a silent default.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .errors import ConfigError
from .settings import SettingsT, check_number, closest, coerce, parse_settings

DEFAULT_USER_AGENT = f"archiver/{__version__} (+https://pypi.org/project/archiver/)"


@dataclass(frozen=True)
class Config:
    """Effective settings of one crawl; `config.example.toml` documents each field."""

    # [crawl]
    roots: tuple[str, ...] = ()
    output: str = ""
    max_tasks: int = 10
    max_redirect: int = 10
    max_tries: int = 4
    max_depth: int = 50
    max_pages: int = 0
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strict: bool = True
    requisites: bool = True
    user_agent: str = DEFAULT_USER_AGENT
    frontier: str = "sqlite"
    crawl_id: str = ""
    lease_seconds: float = 30.0
    """Redis frontier: how long a worker may hold a URL without renewing it before others take it back."""
    retry_backoff: float = 0.5

    # [limits]
    timeout: float = 120.0
    connect_timeout: float = 15.0
    first_byte_timeout: float = 30.0
    min_rate: int = 256
    rate_window: float = 15.0
    max_body_size: int = 64 * 1024 * 1024
    max_decoded_size: int = 128 * 1024 * 1024
    max_decompression_ratio: int = 1000
    max_url_length: int = 2048
    max_links_per_page: int = 10_000
    max_header_size: int = 64 * 1024
    max_repeated_segments: int = 3
    max_query_variants: int = 500
    max_pages_per_host: int = 0

    # [politeness]
    robots: bool = True
    per_host_concurrency: int = 4
    delay: float = -1.0
    """Seconds between two requests to one host; negative = auto (robots.txt Crawl-delay, else 0.25)."""
    retry_after_max: float = 300.0
    adaptive_throttle: bool = False
    allow_private_redirects: bool = False

    # [plugins]
    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    plugins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    _settings: dict[tuple[str, type], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def plugin(self, name: str) -> Mapping[str, Any]:
        """This plugin's `[plugins.NAME]` table, empty when absent."""
        return self.plugins.get(name, {})

    def plugin_settings(self, name: str, cls: type[SettingsT]) -> SettingsT:
        """The `[plugins.NAME]` table checked against the frozen dataclass `cls` (`archiver.settings`).

        Raises ConfigError ``[plugins.NAME] key: why`` for a bad table; checked once per config.
        """
        found = self._settings.get((name, cls))
        if found is None:
            found = self._settings[(name, cls)] = parse_settings(name, cls, self.plugin(name))
        return typing.cast(SettingsT, found)

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def to_toml_dict(self) -> dict[str, Any]:
        """The configuration as nested tables, as `crawl.toml` stores it."""
        tables: dict[str, Any] = {}
        for section, names in SECTIONS.items():
            table = tables.setdefault(section, {})
            for name in names:
                value = getattr(self, name)
                table[name] = list(value) if isinstance(value, tuple) else value
        plugins = tables.setdefault("plugins", {})
        for name, table in self.plugins.items():
            plugins[name] = dict(table)
        return tables


SECTIONS: dict[str, tuple[str, ...]] = {
    "crawl": (
        "roots",
        "output",
        "max_tasks",
        "max_redirect",
        "max_tries",
        "max_depth",
        "max_pages",
        "include",
        "exclude",
        "strict",
        "requisites",
        "user_agent",
        "frontier",
        "crawl_id",
        "lease_seconds",
        "retry_backoff",
    ),
    "limits": (
        "timeout",
        "connect_timeout",
        "first_byte_timeout",
        "min_rate",
        "rate_window",
        "max_body_size",
        "max_decoded_size",
        "max_decompression_ratio",
        "max_url_length",
        "max_links_per_page",
        "max_header_size",
        "max_repeated_segments",
        "max_query_variants",
        "max_pages_per_host",
    ),
    "politeness": (
        "robots",
        "per_host_concurrency",
        "delay",
        "retry_after_max",
        "adaptive_throttle",
        "allow_private_redirects",
    ),
    "plugins": ("enable", "disable"),
}

_FIELD_TYPES = {
    name: kind for name, kind in typing.get_type_hints(Config).items() if not name.startswith("_")
}
_DAY = 86_400.0
_GIB = 1 << 30
BOUNDS: dict[str, tuple[float, float]] = {
    # [crawl]
    "max_tasks": (1, 10_000),
    "max_redirect": (0, 100),
    "max_tries": (1, 100),
    "max_depth": (0, 1_000_000),
    "max_pages": (0, 10**12),
    "lease_seconds": (1, _DAY),
    "retry_backoff": (0, 3_600),
    # [limits]
    "timeout": (0, _DAY),
    "connect_timeout": (0, _DAY),
    "first_byte_timeout": (0, _DAY),
    "min_rate": (0, _GIB),
    "rate_window": (0, _DAY),
    "max_body_size": (0, 16 * _GIB),
    "max_decoded_size": (0, 16 * _GIB),
    "max_decompression_ratio": (0, 1_000_000),
    "max_url_length": (0, 1_000_000),
    "max_links_per_page": (0, 10_000_000),
    "max_header_size": (0, 64 * 1024 * 1024),
    "max_repeated_segments": (0, 1_000),
    "max_query_variants": (0, 10**9),
    "max_pages_per_host": (0, 10**12),
    # [politeness]
    "per_host_concurrency": (1, 1_000),
    "delay": (-math.inf, _DAY),
    "retry_after_max": (0, 7 * _DAY),
}
"""Allowed range of every numeric option: wider than any real crawl needs, narrow enough that a
typo cannot ask for 2**63 workers or a delay longer than a day.  `delay` below 0 means auto."""


def _closest(name: str, candidates: typing.Iterable[str]) -> str:
    match = closest(name, candidates)
    return f" (did you mean {match!r}?)" if match else ""


def _coerce(name: str, value: Any) -> Any:
    """Check `value` against the field's type; ints are accepted where floats are expected."""
    try:
        return coerce(value, _FIELD_TYPES[name])
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _check_values(config: Config) -> None:
    for name, (low, high) in BOUNDS.items():
        check_number(name, getattr(config, name), low, high)
    for name in ("include", "exclude"):
        for pattern in getattr(config, name):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"{name}: invalid regular expression {pattern!r}: {exc}") from exc
    frontier = config.frontier
    if frontier not in ("memory", "sqlite") and "://" not in frontier:
        raise ConfigError(
            f"frontier: expected 'memory', 'sqlite' or the URL of a plugin's frontier, got {frontier!r}"
        )


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def flatten_tables(tables: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """Turn `{section: {key: value}}` into field values, rejecting unknown names."""
    values: dict[str, Any] = {}
    plugin_tables: dict[str, dict[str, Any]] = {}
    for section, table in tables.items():
        if section not in SECTIONS:
            home = [s for s, keys in SECTIONS.items() if section in keys]
            if home:
                raise ConfigError(
                    f"{source}: {section} belongs in the [{home[0]}] table: put it under [{home[0]}]"
                )
            raise ConfigError(f"{source}: unknown table [{section}]{_closest(section, SECTIONS)}")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in table.items():
            if section == "plugins" and isinstance(value, Mapping):
                plugin_tables[key] = dict(value)
                continue
            if key not in SECTIONS[section]:
                everything = [k for keys in SECTIONS.values() for k in keys]
                elsewhere = [s for s, keys in SECTIONS.items() if key in keys]
                hint = (
                    f" (it belongs in [{elsewhere[0]}])"
                    if elsewhere
                    else _closest(key, SECTIONS[section]) or _closest(key, everything)
                )
                raise ConfigError(f"{source}: unknown key {section}.{key}{hint}")
            values[key] = _coerce(key, value)
    if plugin_tables:
        values["plugins"] = plugin_tables
    return values


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Config:
    """Defaults, then the file at `path`, then `overrides` (the command line's non-None options)."""
    values: dict[str, Any] = {}
    if path is not None:
        values.update(flatten_tables(read_toml(path), source=str(path)))
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "plugins":
            merged = {k: dict(v) for k, v in values.get("plugins", {}).items()}
            for name, table in value.items():
                merged.setdefault(name, {}).update(table)
            values["plugins"] = merged
            continue
        if key not in _FIELD_TYPES:
            raise ConfigError(f"unknown setting {key!r}{_closest(key, _FIELD_TYPES)}")
        values[key] = _coerce(key, value)
    config = Config(**values)
    _check_values(config)
    return config
