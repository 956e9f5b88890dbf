"""Parse ``/replay/TIMESTAMP[MODIFIER]/URL``: what was asked for, or a 400 that says why."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from aiohttp import web

from .replay import MODIFIERS

_PATH = re.compile(r"^(?P<ts>\d{1,14})(?P<mod>[a-z]{2}_)?/(?P<url>.+)$", re.S)
_NO_TIMESTAMP = re.compile(r"^https?(?::|%3a)", re.IGNORECASE)
LATEST = "99991231235959"
"""The time asked for by ``/replay/URL`` without one: the nearest capture is the latest."""
_SCHEME_SLASHES = re.compile(r"^(https?):/*", re.IGNORECASE)
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f]")
MAX_URL = 8192


@dataclass(frozen=True, slots=True)
class Target:
    timestamp: str
    modifier: str
    url: str


def bad_request(why: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(reason="Bad replay URL", text=why)


def parse_target(request: web.Request, prefix: str) -> Target:
    """The timestamp, modifier and archived URL named by the request's raw path and query.

    The raw (still percent-encoded) path is used so that the URL is the one the page
    linked to, byte for byte; a query string belongs to the archived URL.
    """
    raw = request.rel_url.raw_path
    if not raw.startswith(prefix):
        raise bad_request("not a replay path")
    rest = raw[len(prefix) :]
    if _NO_TIMESTAMP.match(rest):
        rest = f"{LATEST}/{rest}"
    match = _PATH.match(rest)
    if match is None:
        raise bad_request(f"expected {prefix}TIMESTAMP/URL with a timestamp of up to 14 digits")
    modifier = match.group("mod") or ""
    if modifier not in MODIFIERS:
        raise bad_request(f"unknown modifier {modifier!r}")
    url = match.group("url")
    if url.lower().startswith(("http%3a", "https%3a")):  # a whole URL pasted percent-encoded
        url = unquote(url)
    query = request.rel_url.raw_query_string
    if query:
        url += "?" + query
    url = _SCHEME_SLASHES.sub(lambda m: m.group(1).lower() + "://", url, count=1)
    if "://" not in url:
        url = "http://" + url
    if len(url) > MAX_URL or _FORBIDDEN.search(url):
        raise bad_request("the archived URL is too long or holds spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise bad_request(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad_request("only http and https URLs are archived")
    del port
    return Target(timestamp=match.group("ts"), modifier=modifier, url=url)
