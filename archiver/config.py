"""The crawl's settings: defaults, then a TOML file, then the command line.

Every core key lives in one TOML table (`[crawl]`, `[limits]`, `[politeness]`,
`[plugins]`); plugins own `[plugins.NAME]`, declared as a dataclass (`archiver.settings`)
and read checked with `Config.plugin_settings` in their `configure` hook.
A typo is an error that names the key and the closest valid one, never a silent default.
A key that moved from a core table to a plugin's (`MOVED`) is still read where it was.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .errors import ConfigError
from .hosts import auth_hosts_problem, headers_problem, hosts_tables, proxy_problem
from .settings import (
    SettingsT,
    checked,
    constraint_of,
    did_you_mean,
    parse_settings,
    patterns_problem,
    setting,
)
from .units import parse_duration, parse_size

DEFAULT_USER_AGENT = f"archiver/{__version__} (+https://pypi.org/project/site-archiver/)"
_DAY = 86_400.0
_GIB = 1 << 30


def _frontier_problem(frontier: str) -> str | None:
    if frontier in ("memory", "sqlite") or "://" in frontier:
        return None
    return f"expected 'memory', 'sqlite' or the URL of a plugin's frontier, got {frontier!r}"


@dataclass(frozen=True)
class Config:
    """Effective settings of one crawl; `config.example.toml` documents each field.

    The bounds of every number are wider than any real crawl needs, narrow enough that a
    typo cannot ask for 2**63 workers or a delay longer than a day.
    """

    # [crawl]
    roots: tuple[str, ...] = ()
    output: str = ""
    max_tasks: int = setting(10, low=1, high=10_000)
    max_redirect: int = setting(10, low=0, high=100)
    max_tries: int = setting(4, low=1, high=100)
    max_depth: int = setting(50, low=0, high=1_000_000)
    max_pages: int = setting(0, low=0, high=10**12)
    include: tuple[str, ...] = setting((), check=patterns_problem)
    exclude: tuple[str, ...] = setting((), check=patterns_problem)
    strict: bool = True
    requisites: bool = True
    user_agent: str = DEFAULT_USER_AGENT
    frontier: str = setting("sqlite", check=_frontier_problem)
    retry_backoff: float = setting(0.5, low=0, high=3_600)

    # [limits]
    timeout: float = setting(120.0, low=0, high=_DAY)
    connect_timeout: float = setting(15.0, low=0, high=_DAY)
    first_byte_timeout: float = setting(30.0, low=0, high=_DAY)
    min_rate: int = setting(256, low=0, high=_GIB)
    rate_window: float = setting(15.0, low=0, high=_DAY)
    max_body_size: int = setting(64 * 1024 * 1024, low=0, high=16 * _GIB)
    max_decoded_size: int = setting(128 * 1024 * 1024, low=0, high=16 * _GIB)
    max_decompression_ratio: int = setting(1000, low=0, high=1_000_000)
    max_url_length: int = setting(2048, low=0, high=1_000_000)
    max_links_per_page: int = setting(10_000, low=0, high=10_000_000)
    max_header_size: int = setting(64 * 1024, low=0, high=64 * 1024 * 1024)
    max_repeated_segments: int = setting(3, low=0, high=1_000)
    max_query_variants: int = setting(500, low=0, high=10**9)
    max_pages_per_host: int = setting(0, low=0, high=10**12)
    max_bytes: int = setting(0, low=0, high=1 << 60)
    """Bytes received after which the crawl stops, resumable (0: no limit); `500M`, `2G` in words."""
    max_time: float = setting(0.0, low=0, high=365 * _DAY)
    """Seconds of crawling after which it stops, resumable (0: no limit); `30m`, `12h` in words."""
    min_free_disk: int = setting(100_000_000, low=0, high=1 << 60)
    """The crawl stops, resumable, before the archive's file system has less free space than this."""

    # [politeness]
    robots: bool = True
    per_host_concurrency: int = setting(4, low=1, high=1_000)
    delay: float = setting(-1.0, high=_DAY)
    """Seconds between two requests to one host; negative = auto (robots.txt Crawl-delay, else 0.25)."""
    retry_after_max: float = setting(300.0, low=0, high=7 * _DAY)
    adaptive_throttle: bool = False
    allow_private_redirects: bool = False

    # [session]
    cookies: bool = True
    """A cookie jar per crawl, kept in the archive (ARCHIVE/cookies.json); false sends no cookie."""
    cookies_file: str = ""
    """A Netscape cookies.txt loaded into the jar at the start of each run."""
    headers: tuple[str, ...] = setting((), check=headers_problem)
    """'Name: value' lines sent to the roots' hosts."""
    auth: tuple[str, ...] = setting((), check=auth_hosts_problem)
    """Hosts (host or host:port) given HTTP Basic credentials from ~/.netrc or the environment."""
    allow_logout: bool = False
    expect_text: str = ""
    """Text the page each root leads to must show (a logged-in user's name, 'Sign out'); the
    crawl stops with an error when it does not, rather than archive a logged-out site."""
    redact_credentials: bool = False
    proxy: str = setting("", check=proxy_problem)
    """'' (none), 'env' (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) or the proxy's http:// URL."""
    check_certificate: bool = True
    """False accepts any TLS certificate (--no-check-certificate): warned, and said in the warcinfo."""
    ca_certificate: str = ""
    """A PEM file of certificate authorities trusted besides the system's (--ca-certificate)."""

    # [plugins]
    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    plugins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    hosts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The `[hosts."NAME"]` tables: headers and credentials of one host (`credentials.HostSettings`)."""
    _settings: dict[tuple[str, type], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _read: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def plugin(self, name: str) -> Mapping[str, Any]:
        """This plugin's `[plugins.NAME]` table, empty when absent; a plugin that reads it
        checks it (`checked_tables`)."""
        self._read.add(name)
        return self.plugins.get(name, {})

    def plugin_settings(self, name: str, cls: type[SettingsT]) -> SettingsT:
        """The `[plugins.NAME]` table checked against the frozen dataclass `cls` (`archiver.settings`).

        Raises ConfigError ``[plugins.NAME] key: why`` for a bad table; checked once per config.
        """
        found = self._settings.get((name, cls))
        if found is None:
            found = self._settings[(name, cls)] = parse_settings(name, cls, self.plugin(name))
        return typing.cast(SettingsT, found)

    def checked_tables(self) -> set[str]:
        """The `[plugins.NAME]` tables a plugin has read (and checked) so far."""
        return set(self._read)

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
        if self.hosts:
            tables["hosts"] = {name: dict(table) for name, table in self.hosts.items()}
        return tables


_TABLE_STARTS = {
    "roots": "crawl",
    "timeout": "limits",
    "robots": "politeness",
    "cookies": "session",
    "enable": "plugins",
}
"""The first option of each TOML table; the fields of `Config` after it, up to the next one, are its keys."""


def _sections() -> dict[str, tuple[str, ...]]:
    sections: dict[str, list[str]] = {}
    table = ""
    for option in dataclasses.fields(Config):
        if option.init and option.name not in ("plugins", "hosts"):
            table = _TABLE_STARTS.get(option.name, table)
            sections.setdefault(table, []).append(option.name)
    return {table: tuple(names) for table, names in sections.items()}


SECTIONS = _sections()
_FIELDS = {option.name: option for option in dataclasses.fields(Config) if option.init}
_FIELD_TYPES = typing.get_type_hints(Config)
BOUNDS = {
    name: (limits.low, limits.high)
    for name, option in _FIELDS.items()
    if (limits := constraint_of(option)).low != -math.inf or limits.high != math.inf
}
"""Allowed range of every numeric option (`delay` below 0 means auto)."""

MOVED: Mapping[tuple[str, str], tuple[str, str]] = {
    ("crawl", "crawl_id"): ("redis", "crawl_id"),
    ("crawl", "lease_seconds"): ("redis", "lease_seconds"),
}
"""Keys that moved from a core table to the table of the plugin that uses them:
`(table, key)` -> `(plugin, key)`.  Every crawl.toml saved before the move holds them
(`to_toml_dict` writes every field), and so may a user's file or a configuration a plugin
stored elsewhere: `current_tables` reads them into `[plugins.NAME]`, and `load_config`
takes them as overrides, so that older archives resume as they were."""
_MOVED_KEYS = {key: target for (_, key), target in MOVED.items()}


_IN_WORDS = {"max_bytes": parse_size, "min_free_disk": parse_size, "max_time": parse_duration}
"""Options that may be written in words (`500M`, `30m`) on the command line and in TOML."""


def _checked(name: str, value: Any) -> Any:
    """`value` of option `name`, of the field's type (ints are taken for floats) and within its bounds."""
    try:
        if name in _IN_WORDS and isinstance(value, str):
            value = _IN_WORDS[name](value)
        return checked(value, _FIELD_TYPES[name], constraint_of(_FIELDS[name]))
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


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


def current_tables(tables: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """`tables` with the keys that moved to a plugin's table (`MOVED`) put there.

    A key given in both places with two values is an error: neither is silently dropped.
    """
    result = {section: dict(t) if isinstance(t, Mapping) else t for section, t in tables.items()}
    for (section, key), (plugin, new_key) in MOVED.items():
        table = result.get(section)
        if not isinstance(table, dict) or key not in table:
            continue
        plugins = result.setdefault("plugins", {})
        target = plugins.get(plugin, {}) if isinstance(plugins, dict) else None
        if not isinstance(target, Mapping):
            continue  # left where it was: flatten_tables says what is wrong with the tables
        value = table.pop(key)
        if new_key in target and target[new_key] != value:
            raise ConfigError(
                f"{source}: {section}.{key} = {value!r} and [plugins.{plugin}] {new_key} ="
                f" {target[new_key]!r}: keep only [plugins.{plugin}] {new_key}"
            )
        plugins[plugin] = {**target, new_key: value}
    return result


def _home_of(key: str) -> str | None:
    """The table that holds `key`, core or plugin."""
    home = [s for s, keys in SECTIONS.items() if key in keys]
    if home:
        return home[0]
    moved = _MOVED_KEYS.get(key)
    return f"plugins.{moved[0]}" if moved else None


def flatten_tables(tables: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """Turn `{section: {key: value}}` into field values, rejecting unknown names.

    Keys older versions kept in a core table are read from there too (`MOVED`).
    """
    values: dict[str, Any] = {}
    plugin_tables: dict[str, dict[str, Any]] = {}
    for section, table in current_tables(tables, source).items():
        if section == "hosts":
            values["hosts"] = hosts_tables(table, source)
            continue
        if section not in SECTIONS:
            home = _home_of(section)
            if home:
                raise ConfigError(f"{source}: {section} belongs in the [{home}] table: put it under [{home}]")
            raise ConfigError(f"{source}: [{section}]: unknown table{did_you_mean(section, SECTIONS)}")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in table.items():
            if section == "plugins" and isinstance(value, Mapping):
                plugin_tables[key] = dict(value)
                continue
            if key not in SECTIONS[section]:
                everything = [k for keys in SECTIONS.values() for k in keys]
                elsewhere = _home_of(key)
                hint = (
                    f"; it belongs in [{elsewhere}]"
                    if elsewhere
                    else did_you_mean(key, SECTIONS[section]) or did_you_mean(key, everything)
                )
                raise ConfigError(f"{source}: [{section}] {key}: unknown key{hint}")
            values[key] = _checked(key, value)
    if plugin_tables:
        values["plugins"] = plugin_tables
    return values


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Config:
    """Defaults, then the file at `path`, then `overrides` (the command line's non-None options).

    An override may name a key that moved to a plugin's table (`MOVED`): it sets that table's key.
    """
    values: dict[str, Any] = {}
    if path is not None:
        values.update(flatten_tables(read_toml(path), source=str(path)))
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in _MOVED_KEYS:
            plugin, new_key = _MOVED_KEYS[key]
            key, value = "plugins", {plugin: {new_key: value}}
        if key == "plugins":
            merged = {k: dict(v) for k, v in values.get("plugins", {}).items()}
            for name, table in value.items():
                merged.setdefault(name, {}).update(table)
            values["plugins"] = merged
            continue
        if key == "hosts":
            values["hosts"] = {**values.get("hosts", {}), **hosts_tables(value, "command line")}
            continue
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {key!r}{did_you_mean(key, _FIELDS)}")
        values[key] = _checked(key, value)
    return Config(**values)
