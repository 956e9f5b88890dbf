"""Serve one archived response at ``/replay/TIMESTAMP[MODIFIER]/URL``.

The capture nearest the timestamp is served; a top-level page is first redirected to
its exact capture time, so the address bar, the banner and every rewritten link agree.
Archived redirects are followed inside the archive.  Archived content runs under
`REPLAY_CSP`: it may load only from this server, and the ``sandbox`` directive without
``allow-same-origin`` gives it an opaque origin, so its scripts can neither read the
UI pages nor call out to the live web; without ``allow-popups`` it opens no window.
CSP does not govern navigations or WebRTC: `CONNECTION_ALLOWLIST` does, in the browsers
that honour it (Chromium 152 and later): a replayed page may then connect to, and
navigate to, this server only.

Responses carry no CORS header for a page of another origin, so it cannot read them:
only the origins ``serve --cors`` names get one, and the replayed pages themselves, so
an archived script's ``fetch`` or ``XMLHttpRequest`` of an archived URL works.  Their
opaque origin sends ``Origin: null``, as any sandboxed page's does; what sets them apart
is `REPLAY_HEADER`, holding a secret of this server process that `TOKEN_SCRIPT` (the
first thing of every rewritten page) adds to the page's requests to this server.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
import secrets
from dataclasses import dataclass, replace
from email.utils import formatdate

import jinja2
from aiohttp import web

from archiver.api import ArchiveError, choose_encoding

from ..archive_reader.reader import MissingOriginal, StoredResponse
from .library import Found, Library, seconds
from .replay import FRAME, IDENTITY, UrlRewriter, replay_path, rewrite_html
from .target import Target, parse_target
from .templating import CORS_ORIGINS, ENVIRONMENT, LIBRARY, REPLAY_TOKEN, link_url
from .views import missing_response

REPLAY_CSP = (
    "default-src 'self' data: blob: 'unsafe-inline' 'unsafe-eval'; connect-src 'self'; "
    "form-action 'self'; base-uri 'self'; sandbox allow-scripts allow-forms"
)
INERT_CSP = (
    "default-src 'self' data: blob: 'unsafe-inline'; script-src 'none'; form-action 'none'; "
    "base-uri 'self'; sandbox"
)
"""For whatever was not rewritten (``id_`` bytes, SVG, XML, a type a browser might sniff):
opened as a document, no script runs and, sandboxed without ``allow-scripts``, no
``<meta http-equiv=refresh>`` fires.  As an image, stylesheet or script of a page, the
policy of the page applies instead."""
CONNECTION_ALLOWLIST = "(response-origin);webrtc=block"
_SCRIPT_TYPES = ("javascript", "ecmascript")
"""A worker's script runs under its own response's policy: it keeps the replay policy."""
MAX_REWRITE = 32 * 1024 * 1024
"""Bigger HTML or CSS is served as it is (the CSP still keeps it inside the server)."""

HTML_TYPES = ("text/html", "application/xhtml+xml")
PASSED_HEADERS = ("content-language",)


def replay_headers(request: web.Request, timestamp: str) -> dict[str, str]:
    headers = {
        "Content-Security-Policy": INERT_CSP,
        "Connection-Allowlist": CONNECTION_ALLOWLIST,
        "Memento-Datetime": _http_date(timestamp),
        "Cache-Control": "no-cache",
        "Vary": "Origin",
    }
    origin = request.headers.get("Origin")
    if origin is not None and (origin in request.app[CORS_ORIGINS] or _from_replay(request, origin)):
        headers["Access-Control-Allow-Origin"] = origin
    return headers


REPLAY_HEADER = "X-Archiver-Replay"
TOKEN_SCRIPT = (
    "<script>(() => {{"
    "const token = {token}, name = {name}, server = new URL(location.href).origin;"
    "const ours = (url) => {{ try {{ return new URL(url, document.baseURI).origin === server; }}"
    " catch (e) {{ return false; }} }};"
    "const fetch0 = window.fetch;"
    "window.fetch = function (input, init) {{ const request = new Request(input, init);"
    " if (ours(request.url)) request.headers.set(name, token); return fetch0.call(this, request); }};"
    "const xhr = XMLHttpRequest.prototype, open0 = xhr.open, send0 = xhr.send, mine = new WeakSet();"
    "xhr.open = function (method, url, ...rest) {{ if (ours(url)) mine.add(this); else mine.delete(this);"
    " return open0.call(this, method, url, ...rest); }};"
    "xhr.send = function (...args) {{"
    " if (mine.has(this)) this.setRequestHeader(name, token); return send0.apply(this, args); }};"
    "}})();</script>"
)
"""Runs before the page's own scripts: its requests to this server carry the token."""


def _from_replay(request: web.Request, origin: str) -> bool:
    """A request made by a page this server replays (or a font it loads, which its scripts cannot read)."""
    if origin != "null":
        return False
    if request.headers.get("Sec-Fetch-Dest") == "font":
        return True
    return secrets.compare_digest(request.headers.get(REPLAY_HEADER, ""), request.app[REPLAY_TOKEN])


async def replay_preflight(request: web.Request) -> web.Response:
    """The CORS preflight of a replayed page's request carrying `REPLAY_HEADER`: it reveals nothing."""
    asked = request.headers.get("Access-Control-Request-Headers", "").lower()
    if request.headers.get("Origin") != "null" or REPLAY_HEADER.lower() not in asked:
        return web.Response(status=204, headers={"Vary": "Origin"})
    headers = {
        "Access-Control-Allow-Origin": "null",
        "Access-Control-Allow-Headers": REPLAY_HEADER,
        "Access-Control-Allow-Methods": "GET, HEAD",
        "Access-Control-Max-Age": "600",
        "Vary": "Origin",
    }
    return web.Response(status=204, headers=headers)


def _http_date(timestamp: str) -> str:
    return formatdate(seconds(timestamp), usegmt=True)


@dataclass(frozen=True, slots=True)
class Body:
    data: bytes
    content_type: str
    content_encoding: str | None = None
    rewritten: bool = False

    @property
    def policy(self) -> str:
        """Scripts run only in a page whose links were rewritten into the archive."""
        kind = self.content_type.split(";", 1)[0].lower()
        return REPLAY_CSP if self.rewritten or any(t in kind for t in _SCRIPT_TYPES) else INERT_CSP


def _media_type(stored: StoredResponse) -> str:
    return stored.content_type or (mimetypes.guess_type(stored.url.split("?", 1)[0])[0] or "")


def _declared_charset(stored: StoredResponse) -> str | None:
    for part in (stored.header("Content-Type") or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip("\"'")
    return None


def build_body(
    library: Library,
    found: Found,
    stored: StoredResponse,
    target: Target,
    env: jinja2.Environment,
    token: str = "",
) -> Body:
    """The bytes to send and their Content-Type; blocking (decoding and rewriting).

    Only what is rewritten is decoded, and only up to `MAX_REWRITE`: everything else is
    sent as stored, Content-Encoding included, so a small compressed body that inflates
    to gigabytes costs the server nothing.
    """
    mime = _media_type(stored)
    original_type = stored.header("Content-Type") or mime or "application/octet-stream"
    as_stored = Body(stored.payload, original_type, stored.header("Content-Encoding"))
    if target.modifier == IDENTITY or (mime not in HTML_TYPES and mime != "text/css"):
        return as_stored
    try:
        content = stored.content(MAX_REWRITE)
    except ArchiveError:  # bigger than we rewrite, or not decodable: the browser gets it as stored
        return as_stored
    encoding, _source = choose_encoding(content, mime, _declared_charset(stored))
    text = content.decode(encoding, errors="replace")
    known: dict[str, bool] = {}

    def is_archived(url: str) -> bool:  # pages repeat their links: ask the index once each
        if url not in known:
            known[url] = library.is_archived(url)
        return known[url]

    urls = UrlRewriter(stored.url, found.capture.timestamp, is_archived=is_archived)
    if mime == "text/css":
        return Body(urls.rewrite_css(text).encode("utf-8"), "text/css; charset=utf-8")
    banner = "" if target.modifier == FRAME else _banner(library, found, stored, target, env)
    preamble = TOKEN_SCRIPT.format(token=json.dumps(token), name=json.dumps(REPLAY_HEADER)) if token else ""
    page = rewrite_html(text, urls, banner, preamble)
    return Body(page.encode("utf-8"), f"{mime}; charset=utf-8", rewritten=True)


def _banner(
    library: Library, found: Found, stored: StoredResponse, target: Target, env: jinja2.Environment
) -> str:
    """The strip above a replayed page: when it was captured, what it was, the other captures."""
    # a fuzzy match stands in for a URL never archived: its own captures are the ones to list
    url = found.capture.url if found.fuzzy else target.url
    by_time = {f.capture.timestamp: f.capture for f in library.history(url)}
    stamps = sorted(by_time)
    current = found.capture.timestamp
    index = stamps.index(current) if current in stamps else 0
    return env.get_template("banner.html").render(
        capture=found.capture,
        url=url,
        asked=target.url if found.fuzzy else None,
        original=stored.url,
        status=stored.status,
        truncated=stored.truncated,
        position=index + 1,
        total=max(len(stamps), 1),
        previous=by_time[stamps[index - 1]] if index > 0 else None,
        following=by_time[stamps[index + 1]] if index + 1 < len(stamps) else None,
    )


MAX_INNER_REDIRECTS = 10


def _missing_original(exc: MissingOriginal) -> str:
    """What a revisit lacks, as pywb says it (503): the archive may yet receive the original."""
    capture = exc.capture
    return (
        f"The capture of {capture.url} at {capture.timestamp} is a revisit: its content is that of"
        f" an earlier capture with payload digest {capture.digest}, which this archive does not hold."
        " Import the WARC file holding that capture to replay it."
    )


def _is_navigation(request: web.Request) -> bool:
    return request.headers.get("Sec-Fetch-Dest", "document") in ("document", "iframe", "frame", "")


async def replay(request: web.Request, inner: Target | None = None, hops: int = 0) -> web.StreamResponse:
    library = request.app[LIBRARY]
    target = inner or parse_target(request, "/replay/")
    found = await asyncio.to_thread(library.nearest, target.url, target.timestamp)
    if found is None:
        if target.modifier in ("", FRAME):
            return missing_response(request, target.url)
        return web.Response(
            status=404, text="not archived", headers=replay_headers(request, target.timestamp)
        )
    capture = found.capture
    if target.modifier == "" and capture.timestamp != target.timestamp and capture.mime in HTML_TYPES:
        # a page is moved to its exact time, so its banner, address and links agree;
        # the images and stylesheets it loads are served at once from the nearest capture
        raise web.HTTPFound(link_url(replay_path(capture.timestamp, target.url)))
    try:
        stored = await asyncio.to_thread(found.archive.read, capture)
    except MissingOriginal as exc:
        raise web.HTTPServiceUnavailable(text=_missing_original(exc)) from None
    status = stored.status or 200
    if 300 <= status < 400 and target.modifier != IDENTITY:
        location = stored.header("Location")
        resolved = UrlRewriter(stored.url, capture.timestamp).absolute(location) if location else None
        if resolved is not None and resolved != target.url:
            if _is_navigation(request) or hops >= MAX_INNER_REDIRECTS:
                raise web.HTTPFound(link_url(replay_path(target.timestamp, resolved, target.modifier)))
            # an image or script of the page: followed here, as the page's opaque origin
            # may not be sent through a redirect (Connection-Allowlist)
            return await replay(request, replace(target, url=resolved), hops + 1)
    body = await asyncio.to_thread(
        build_body, library, found, stored, target, request.app[ENVIRONMENT], request.app[REPLAY_TOKEN]
    )
    headers = replay_headers(request, capture.timestamp)
    for name, value in stored.headers:
        if name.lower() in PASSED_HEADERS:
            headers[name] = value
    response = web.Response(body=body.data, status=status if 200 <= status < 600 else 200, headers=headers)
    response.headers["Content-Type"] = body.content_type
    if body.content_encoding:
        response.headers["Content-Encoding"] = body.content_encoding
    response.headers["Content-Security-Policy"] = body.policy
    return response
