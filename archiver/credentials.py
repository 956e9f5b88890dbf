"""What a crawl sends to a site that wants to know who it is: extra headers and credentials per host.

A credential goes to one host only, named as the URL writes it (``intranet.example`` or
``127.0.0.1:8080``): the crawler follows redirects itself and asks `SiteCredentials` for
the headers of every request, so a redirect to another host never carries them.  Logins
and passwords come from ``~/.netrc`` (the file curl and wget read; ``NETRC`` names another)
or from environment variables, never from the command line, where ``ps`` shows them: the
configuration (and the archive's ``crawl.toml``) only says where to find them.
"""

from __future__ import annotations

import base64
import dataclasses
import netrc
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus, urlsplit

from .errors import ConfigError
from .hosts import HostSettings, host_key, parse_header
from .settings import parse_settings

if TYPE_CHECKING:
    from .config import Config

REDACTED = "[redacted]"
"""What `--redact-credentials` stores in place of a secret header's value."""

_LOGOUT = re.compile(r"(?:^|[^a-z])(?:log|sign)[-_ +.]?(?:out|off)(?:$|[^a-z])", re.IGNORECASE)
_LOGOUT_CAMEL = re.compile(r"(?<=[a-z])(?:Log|Sign)[-_ +.]?[Oo](?:ut|ff)(?:$|[^a-z])")
_DESTRUCTIVE = re.compile(
    r"(?:^|[^a-z])(delete|destroy|revoke|deactivate|unsubscribe)(?:$|[^a-z])|"
    r"(?<=[a-z])(Delete|Destroy|Revoke|Deactivate|Unsubscribe)(?:$|[^a-z])",
    re.IGNORECASE,
)
_ALWAYS_SECRET = ("authorization", "cookie", "proxy-authorization")


def host_settings(config: Config) -> dict[str, HostSettings]:
    """Every host's settings: the ``[hosts]`` tables, with ``--auth HOST`` turning on basic."""
    found = {
        name: parse_settings(name, HostSettings, table, where=f'[hosts."{name}"]')
        for name, table in config.hosts.items()
    }
    for host in config.auth:
        host = host.lower()
        current = found.get(host, HostSettings())
        if not current.auth:
            found[host] = dataclasses.replace(current, auth="basic")
    return found


def logged_in(config: Config) -> bool:
    """Whether the crawl was given cookies, headers or credentials: it may have something to lose."""
    return bool(
        config.cookies_file
        or config.headers
        or config.auth
        or any(table.get("auth") or table.get("headers") for table in config.hosts.values())
    )


_DOCUMENT = re.compile(r"\.(?:html?|xhtml|md|rst|txt|pdf)$", re.IGNORECASE)
_OTHER_WORDS = re.compile(r"[^\W\d_]+")


def _decoded_pieces(url: str) -> tuple[list[str], list[str]]:
    """The path segments and the query of `url` as the server reads them: every escape undone
    (``/%6Cogout``, ``Log%20out``), escaped slashes and dot segments as slashes
    (``/x/..%2Flogout``), ``+`` in the query as a space (and the query as written)."""
    parts = urlsplit(url)
    return unquote(parts.path).split("/"), [unquote_plus(parts.query), parts.query]


def _about_signing_out(segment: str) -> bool:
    """A document (``logout-views.html``) or a title's slug (``why-signout-matters``: two words
    or more besides the sign-out word): a page about signing out, not a link that does it."""
    if _DOCUMENT.search(segment):
        return True
    rest = _LOGOUT.sub(" ", segment)
    return len(_OTHER_WORDS.findall(rest)) >= 2


def looks_like_logout(url: str) -> bool:
    """Whether `url` reads like a sign-out link (logout, log-out, signoff, ... in path or query)."""
    segments, queries = _decoded_pieces(url)
    pieces = [segment for segment in segments if not _about_signing_out(segment)] + queries
    return any(pattern.search(piece) for pattern in (_LOGOUT, _LOGOUT_CAMEL) for piece in pieces)


def destructive_word(url: str) -> str | None:
    """The word that makes `url` read like a GET that destroys something of the account it is
    made with (``/delete?id=1``, ``/session/destroy``, ``/tokens/revoke``), or None."""
    segments, queries = _decoded_pieces(url)
    for piece in segments + queries:
        found = _DESTRUCTIVE.search(piece)
        if found is not None:
            return (found.group(1) or found.group(2)).lower()
    return None


def logout_refusal(url: str, config: Config) -> str | None:
    """The `logout` rule: a crawl with credentials does not follow what would end its session,
    nor what would delete or revoke something with it."""
    if config.allow_logout or not logged_in(config):
        return None
    if looks_like_logout(url):
        return "logout: looks like a sign-out link of a crawl with credentials (--allow-logout follows it)"
    word = destructive_word(url)
    if word is not None:
        return (
            f"logout: looks like a link that changes the account ({word!r}) of a crawl with credentials"
            " (--allow-logout follows it)"
        )
    return None


def _netrc_name() -> str:
    """The netrc file as a message names it: the file NETRC names, else ``~/.netrc``."""
    return os.environ.get("NETRC") or "~/.netrc"


def _netrc_entry(host: str) -> tuple[str, str] | None:
    """(login, password) of `host`'s ``machine`` entry (tried with and without its port)."""
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    if not path.is_file():
        return None
    try:
        parsed = netrc.netrc(str(path))
    except netrc.NetrcParseError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: {exc.msg}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    for name in dict.fromkeys((host, host.rpartition(":")[0] if ":" in host.strip("[]") else host)):
        entry = parsed.authenticators(name) if name else None
        if entry is not None:
            login, _account, password = entry
            return login or "", password or ""
    return None


def login_of(
    host: str, login_env: str = "ARCHIVER_LOGIN", password_env: str = "ARCHIVER_PASSWORD"
) -> tuple[str, str]:
    """(login, password) for `host`: ~/.netrc's ``machine`` entry, else the two variables;
    ConfigError naming both places when neither has them (a form login's credentials)."""
    entry = _netrc_entry(host)
    if entry is not None:
        return entry
    login, password = os.environ.get(login_env), os.environ.get(password_env)
    if not login or password is None:
        raise ConfigError(
            f"no credentials for {host}: add `machine {host} login NAME password SECRET` to ~/.netrc"
            f" or set {login_env} and {password_env}"
        )
    return login, password


def authorization(host: str, settings: HostSettings) -> str | None:
    """The Authorization header value for `host`; ConfigError when no credentials are found."""
    if not settings.auth:
        return None
    entry = _netrc_entry(host)
    if settings.auth == "bearer":
        token = os.environ.get(settings.token_env) or (entry[1] if entry else "")
        if not token:
            raise ConfigError(
                f"no token for {host}: set {settings.token_env}"
                f" or give a password in {_netrc_name()}'s `machine {host}`"
            )
        return f"Bearer {token}"
    if entry is None:
        login, password = os.environ.get(settings.login_env), os.environ.get(settings.password_env)
        if not login or password is None:
            raise ConfigError(
                f"no credentials for {host}: add `machine {host} login NAME password SECRET`"
                f" to {_netrc_name()}"
                f" or set {settings.login_env} and {settings.password_env}"
            )
        entry = (login, password)
    login, password = entry
    if ":" in login:
        raise ConfigError(f"the login for {host} holds a ':', which HTTP Basic cannot carry")
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode("ascii")


class SiteCredentials:
    """The headers each host gets, worked out once at the start of a crawl."""

    def __init__(self, config: Config) -> None:
        common = [parse_header(line) for line in config.headers]
        self._by_host: dict[str, list[tuple[str, str]]] = {}
        for root in config.roots:
            if common:
                self._by_host.setdefault(host_key(root), []).extend(common)
        for host, settings in host_settings(config).items():
            extra = self._by_host.setdefault(host, [])
            extra.extend(parse_header(line) for line in settings.headers)
            value = authorization(host, settings)
            if value is not None:
                extra.append(("Authorization", value))
        self.secret_names = frozenset(
            {*_ALWAYS_SECRET, *(name.lower() for extra in self._by_host.values() for name, _ in extra)}
        )
        self.redact = config.redact_credentials

    def headers_for(self, url: str) -> list[tuple[str, str]]:
        """The extra headers of a request to `url` (none for a host that was given none)."""
        return self._by_host.get(host_key(url), []) if self._by_host else []

    def hosts(self) -> dict[str, list[tuple[str, str]]]:
        return {host: list(extra) for host, extra in self._by_host.items() if extra}

    def stored(self, headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """Request headers as the archive keeps them: secrets replaced when `redact_credentials`."""
        if not self.redact:
            return tuple(headers)
        secret = self.secret_names
        return tuple((name, REDACTED if name.lower() in secret else value) for name, value in headers)


def stored_response_headers(headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Response headers as a redacting archive keeps them: each ``Set-Cookie`` keeps its name
    and attributes (replay and `why` read them), its value is `REDACTED`.  The session a site
    hands out is as much a secret as the one given to the crawl."""
    kept = []
    for name, value in headers:
        if name.lower() in ("set-cookie", "set-cookie2"):
            pair, semicolon, attributes = value.partition(";")
            cookie_name, equals, _ = pair.partition("=")
            value = f"{cookie_name.strip()}={REDACTED}{semicolon}{attributes}" if equals else REDACTED
        kept.append((name, value))
    return tuple(kept)


def unredacted_secrets(tables: Mapping[str, Any]) -> str | None:
    """What a saved configuration (crawl.toml's tables) sent that its WARC request records hold
    in the clear, in words, or None: an export meant for others should say so."""
    session = tables.get("session")
    session = session if isinstance(session, Mapping) else {}
    if session.get("redact_credentials"):
        return None
    given = []
    if session.get("cookies_file"):
        given.append("cookies from --cookies")
    if session.get("headers"):
        given.append("--header values")
    hosts = tables.get("hosts")
    hosts = hosts if isinstance(hosts, Mapping) else {}
    with_auth = sorted({*session.get("auth", ()), *(h for h, t in hosts.items() if isinstance(t, Mapping))})
    if with_auth:
        given.append("credentials or headers for " + ", ".join(with_auth))
    return ", ".join(given) or None
