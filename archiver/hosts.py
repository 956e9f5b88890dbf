"""The checks of what a configuration says about hosts: header lines, host names, proxies, `[hosts]` tables.

Apart from `credentials` (which reads ~/.netrc and the environment when a crawl starts) so
that `config` can check a file without them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from .errors import ConfigError
from .settings import parse_settings

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def parse_header(line: str) -> tuple[str, str]:
    """``Name: value`` as (name, value); ConfigError names the line when it is not a header."""
    name, colon, value = line.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _TOKEN.fullmatch(name):
        raise ConfigError(f"{line!r} is not a header: expected 'Name: value' (a name of letters, digits, -)")
    if any(char in value for char in "\r\n\0"):
        raise ConfigError(f"header {name!r}: a value may not hold a line break")
    if name.lower() == "host":
        raise ConfigError(f"header {line!r}: Host is the URL's own; it cannot be set")
    return name, value


def headers_problem(lines: tuple[str, ...]) -> str | None:
    """A settings `check`: why one of the ``Name: value`` lines is not a header."""
    for line in lines:
        try:
            parse_header(line)
        except ConfigError as exc:
            return str(exc)
    return None


def host_key(url: str) -> str:
    """The host of `url` as written, with its port when it gives one, lower-cased."""
    netloc = urlsplit(url).netloc.rpartition("@")[2].lower()
    return netloc.rstrip(".")


def auth_hosts_problem(hosts: tuple[str, ...]) -> str | None:
    for host in hosts:
        if not host or "/" in host or "@" in host or host != host.strip():
            return f"{host!r} is not a host (give it as the URL writes it: example.org or 127.0.0.1:8080)"
    return None


def proxy_problem(proxy: str) -> str | None:
    if proxy in ("", "env") or (proxy.startswith("http://") and urlsplit(proxy).hostname):
        return None
    return f"expected 'env' or a proxy's http://HOST:PORT URL, got {proxy!r}"


@dataclass(frozen=True)
class HostSettings:
    """One ``[hosts."NAME"]`` table: what every request to that host carries."""

    headers: tuple[str, ...] = ()
    auth: Literal["", "basic", "bearer"] = ""
    """basic: login and password from ~/.netrc's `machine NAME`, else the two variables below;
    bearer: the token from `token_env`, else the password of ~/.netrc's entry."""
    login_env: str = "ARCHIVER_LOGIN"
    password_env: str = "ARCHIVER_PASSWORD"
    token_env: str = "ARCHIVER_TOKEN"


def hosts_tables(tables: Any, source: str) -> dict[str, dict[str, Any]]:
    """The ``[hosts]`` tables checked; ConfigError ``[hosts."NAME"] key: why`` for a bad one."""
    if not isinstance(tables, Mapping):
        raise ConfigError(f'{source}: [hosts] must hold tables, [hosts."example.org"]')
    checked: dict[str, dict[str, Any]] = {}
    for name, table in tables.items():
        where = f'hosts."{name}"'
        problem = auth_hosts_problem((name,))
        if problem:
            raise ConfigError(f"{source}: [{where}] {problem}")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: [{where}] must be a table")
        try:
            settings = parse_settings(where, HostSettings, table, where=f"[{where}]")
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        problem = headers_problem(settings.headers)
        if problem:
            raise ConfigError(f"{source}: [{where}] headers: {problem}")
        checked[name.lower()] = dict(table)
    return checked
