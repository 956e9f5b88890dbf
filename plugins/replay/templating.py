"""Templates and the shared state of the application.

Autoescaping is on for every template: a string from an archived page reaches the
page escaped unless the code wrapped it in `Markup` on purpose (only the search
highlighter's checked snippets and the replay banner are).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from aiohttp import web

from archiver.api import size

from .library import Library
from .replay import replay_path
from .status import LogFollower

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

LIBRARY = web.AppKey("library", Library)
ENVIRONMENT = web.AppKey("environment", jinja2.Environment)
FOLLOWERS = web.AppKey("followers", dict[str, LogFollower])
CORS_ORIGINS = web.AppKey("cors_origins", frozenset[str])
"""Origins (``serve --cors``) allowed to read replayed responses from their own pages."""
REPLAY_TOKEN = web.AppKey("replay_token", str)
"""A secret of this server process, written into every replayed page for its own requests."""

UI_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
"""UI pages run no script at all and load nothing but this server's stylesheet."""

SAFE_URL_CHARACTERS = "/:?#[]@!$&'()*+,;=%~"


def link_url(url: str) -> str:
    """`url` with spaces, quotes and non-ASCII percent-encoded, for a path or a Location header."""
    return quote(url, safe=SAFE_URL_CHARACTERS)


def format_timestamp(timestamp: str) -> str:
    """'20240102030405' -> '2024-01-02 03:04:05'; partial timestamps as far as they go."""
    t = (timestamp or "")[:14]
    if not t.isdigit():
        return t
    parts = [t[0:4], t[4:6], t[6:8]]
    date = "-".join(p for p in parts if p)
    clock = ":".join(p for p in (t[8:10], t[10:12], t[12:14]) if p)
    return f"{date} {clock}".strip()


def _replay_url(timestamp: str, url: str, modifier: str = "") -> str:
    return link_url(replay_path(timestamp, url, modifier))


def _query(base: str, **params: Any) -> str:
    """`base?params`, dropping empty values: pagination and filter links."""
    kept = {k: v for k, v in params.items() if v not in (None, "", 0)}
    return f"{base}?{urlencode(kept)}" if kept else base


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["ts"] = format_timestamp
    env.filters["size"] = size  # decimal units, as every size archiver prints
    env.globals["replay_url"] = _replay_url
    env.globals["query"] = _query
    env.globals["quote"] = lambda value: quote(str(value), safe="")
    return env


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    env = request.app[ENVIRONMENT]
    library = request.app[LIBRARY]
    text = env.get_template(template).render(archives=library.handles, **context)
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")
