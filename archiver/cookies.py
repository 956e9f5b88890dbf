"""Cookies as plain records: read from a Netscape ``cookies.txt``, traded with the browser plugin.

``cookies.txt`` is the file browser extensions, curl, wget and yt-dlp read and write: one
cookie a line, seven fields separated by tabs (domain, whether subdomains get it, path,
whether it needs https, expiry as a Unix time with 0 for a session cookie, name, value),
``#`` comments, and curl's ``#HttpOnly_`` prefix before the domain.  It is parsed here
rather than with `http.cookiejar.MozillaCookieJar` so that a broken line is reported with
its number, and the browser's export quirks (a missing empty value, CRLF) are taken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .cookiejar import is_public_suffix
from .errors import ConfigError

_HTTP_ONLY = "#HttpOnly_"
_FIELDS = "domain, subdomains, path, secure, expires, name, value"
_MAX_FILE = 16 * 1024 * 1024
LAST_EXPIRY = 253_402_300_799.0
"""The last second of the year 9999: a later expiry (``1e20``) means "never", and is kept as this."""


@dataclass(frozen=True, slots=True)
class Cookie:
    """One cookie, with the attributes that decide where it is sent."""

    name: str
    value: str
    domain: str
    """Without a leading dot."""
    path: str = "/"
    host_only: bool = True
    """Sent to `domain` itself only; False sends it to its subdomains too."""
    secure: bool = False
    expires: float | None = None
    """Unix time; None for a session cookie."""
    http_only: bool = False


def _flag(text: str, line: int, what: str, source: str) -> bool:
    upper = text.strip().upper()
    if upper not in ("TRUE", "FALSE"):
        raise ConfigError(f"{source}:{line}: {what} must be TRUE or FALSE, got {text!r}")
    return upper == "TRUE"


def _domain_problem(domain: str, subdomains: bool) -> str | None:
    """Why `domain` (a cookies.txt domain field) names no site, or None.

    ``.`` would send the cookie to every host, ``.com`` to every site under a public suffix:
    browsers never export such a line, a hand-made or hostile file may hold one.  A cookie
    of a host that is itself a public suffix (``localhost``, ``github.io``) stays its own."""
    name = domain[1:] if domain.startswith(".") else domain
    if not name or any(char in name for char in " /:\t"):
        return "no host name"
    if name.endswith(".") or ".." in name or name.startswith("."):
        return "an empty label"
    if (subdomains or domain.startswith(".")) and is_public_suffix(name):
        return "a public suffix, shared by every site under it"
    return None


def parse_cookies_txt(text: str, source: str) -> list[Cookie]:
    """Every cookie of a cookies.txt; ConfigError ``FILE:LINE: why`` for the first broken line."""
    cookies: list[Cookie] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        http_only = line.startswith(_HTTP_ONLY)
        if http_only:
            line = line[len(_HTTP_ONLY) :]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) == 6:
            fields.append("")  # an empty value, its tab dropped by some exporters
        if len(fields) != 7:
            raise ConfigError(
                f"{source}:{number}: expected 7 fields separated by tabs ({_FIELDS}), got {len(fields)}"
            )
        domain, subdomains, path, secure, expires, name, value = fields
        domain = domain.strip().lower()
        include_subdomains = _flag(subdomains, number, "the subdomains field", source)
        problem = _domain_problem(domain, include_subdomains)
        if problem is not None:
            raise ConfigError(f"{source}:{number}: {domain!r} is not a cookie domain: {problem}")
        if not name.strip():
            raise ConfigError(f"{source}:{number}: the cookie has no name")
        try:
            when = float(expires.strip() or 0)
        except ValueError:
            raise ConfigError(f"{source}:{number}: expires must be a Unix time, got {expires!r}") from None
        if not math.isfinite(when):
            raise ConfigError(f"{source}:{number}: expires must be a Unix time, got {expires!r}")
        when = min(when, LAST_EXPIRY)
        cookies.append(
            Cookie(
                name=name.strip(),
                value=value,
                domain=domain.lstrip("."),
                path=path.strip() or "/",
                host_only=not include_subdomains and not domain.startswith("."),
                secure=_flag(secure, number, "the secure field", source),
                expires=when if when > 0 else None,
                http_only=http_only,
            )
        )
    return cookies


def read_cookies_file(path: Path) -> list[Cookie]:
    """The cookies of the cookies.txt at `path`; ConfigError for a missing, huge or broken file."""
    try:
        if path.stat().st_size > _MAX_FILE:
            raise ConfigError(f"{path}: over {_MAX_FILE // (1024 * 1024)} MB: not a cookies.txt")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"cookies file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read cookies file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text: not a cookies.txt") from None
    return parse_cookies_txt(text, str(path))
