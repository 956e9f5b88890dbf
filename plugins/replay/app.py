"""The aiohttp application behind ``archiver serve``: routes, error pages, security headers.

Two kinds of response leave this server.  UI pages (search, browse, history, diff, changes, status)
carry `UI_CSP`, which allows no script at all.  Archived content under ``/replay/``
carries the replay policy (see `replay_view`).  A request whose Host is not a name of
this server is refused (421), so a web page elsewhere cannot reach the archive through
DNS rebinding: on loopback only loopback names are answered; on any other address also
an IP address (a rebinding attack needs a name it controls), the machine's own name and
the names given with ``--allow-host``.
"""

from __future__ import annotations

import ipaddress
import logging
import mimetypes
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from archiver.api import ArchiveError, Hooks, make_plugin_manager

from .changes_view import DIFF_SLOTS, DIFFS_AT_ONCE, DIFFS_WAITING, changes_page, diff_page
from .library import REFRESH_SECONDS, Library
from .rendered_view import rendered_record
from .replay_view import replay, replay_preflight
from .slots import Slots
from .templating import (
    CORS_ORIGINS,
    ENVIRONMENT,
    FOLLOWERS,
    LIBRARY,
    REPLAY_TOKEN,
    STATIC,
    UI_CSP,
    make_environment,
    render,
)
from .views import browse_page, history_page, missing_page, status_page

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(frozen=True, slots=True)
class HostCheck:
    """The Host header values this server answers to."""

    names: frozenset[str]
    any_address: bool = False
    """Also any IP address: a server listening beyond loopback is reached by its addresses."""

    def allows(self, name: str) -> bool:
        return name in self.names or (self.any_address and _is_address(name))

    @classmethod
    def for_address(cls, host: str, allow_hosts: Iterable[str] = ()) -> HostCheck:
        names = LOOPBACK_NAMES | {host.lower()} | {n.strip().lower() for n in allow_hosts if n.strip()}
        if is_loopback(host):
            return cls(frozenset(names))
        return cls(frozenset(names | machine_names()), any_address=True)


ALLOWED_HOSTS = web.AppKey("allowed_hosts", HostCheck)
STATIC_FILES = web.AppKey("static_files", dict)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

UI_HEADERS = {
    "Content-Security-Policy": UI_CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def _host_name(host: str) -> str:
    """'127.0.0.1:8080' -> '127.0.0.1'; '[::1]:80' -> '[::1]'."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@web.middleware
async def check_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.app[ALLOWED_HOSTS].allows(_host_name((request.host or "").lower())):
        raise web.HTTPMisdirectedRequest(
            text="this server answers only to its own names and addresses (serve --allow-host adds one)"
        )
    return await handler(request)


@web.middleware
async def error_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes a short page with its status: never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
        response = _error(request, exc.status, exc.reason, message)
        if "Retry-After" in exc.headers:
            response.headers["Retry-After"] = exc.headers["Retry-After"]
        return response
    except ArchiveError as exc:
        log.warning("%s: %s", request.path, exc)
        return _error(request, 500, "Archive error", str(exc))
    except Exception:
        log.exception("error serving %s", request.path)
        return _error(request, 500, "Internal Server Error", "the server failed to answer; see its log")


def _error(request: web.Request, status: int, reason: str, message: str) -> web.Response:
    response = render(
        request, "error.html", status=status, section="", code=status, reason=reason, message=message
    )
    response.headers.update(UI_HEADERS)
    return response


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """UI pages get the UI policy; replayed content set its own before this runs."""
    if "Content-Security-Policy" not in response.headers:
        for name, value in UI_HEADERS.items():
            response.headers.setdefault(name, value)


def _load_static() -> dict[str, tuple[bytes, str]]:
    """The bundled static files, by name: nothing else on disk can be asked for."""
    files = {}
    for path in STATIC.iterdir():
        if path.is_file() and not path.name.startswith("."):
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            files[path.name] = (path.read_bytes(), kind)
    return files


async def static_file(request: web.Request) -> web.Response:
    found = request.app[STATIC_FILES].get(request.match_info["name"])
    if found is None:
        raise web.HTTPNotFound(text="no such file")
    data, kind = found
    return web.Response(body=data, content_type=kind, headers={"Cache-Control": "max-age=3600"})


async def favicon(request: web.Request) -> web.Response:
    return web.Response(status=204)


def make_app(
    archives: Sequence[Path | str] | Library,
    *,
    host: str = "127.0.0.1",
    refresh_seconds: float = REFRESH_SECONDS,
    allow_hosts: Iterable[str] = (),
    cors: Iterable[str] = (),
    routes: Iterable[web.AbstractRouteDef] | None = None,
) -> web.Application:
    """The web application serving `archives` (folders or WARC files).

    `host` is the address the server listens on and `allow_hosts` more names it answers
    to (see `HostCheck`); `cors` are origins whose pages may read replayed responses.
    `routes` are the pages other plugins add (the ``register_routes`` hook); by default, those
    of every installed plugin.
    """
    if routes is None:
        routes = Hooks(make_plugin_manager()).routes()
    library = archives if isinstance(archives, Library) else Library.open(archives, refresh_seconds)
    app = web.Application(middlewares=[check_host, error_pages], client_max_size=64 * 1024)
    app[LIBRARY] = library
    app[ENVIRONMENT] = make_environment()
    app[FOLLOWERS] = {}
    app[STATIC_FILES] = _load_static()
    app[ALLOWED_HOSTS] = HostCheck.for_address(host, allow_hosts)
    app[CORS_ORIGINS] = frozenset(origin.rstrip("/") for origin in cors)
    app[REPLAY_TOKEN] = secrets.token_urlsafe(18)
    app[DIFF_SLOTS] = Slots(DIFFS_AT_ONCE, DIFFS_WAITING)
    app.on_response_prepare.append(_security_headers)
    app.router.add_routes(routes)
    app.router.add_get("/browse", browse_page)
    app.router.add_get("/history", history_page)
    app.router.add_get("/diff", diff_page)
    app.router.add_get("/changes", changes_page)
    app.router.add_get("/status", status_page)
    app.router.add_get("/replay/{tail:.*}", replay)
    app.router.add_route("OPTIONS", "/replay/{tail:.*}", replay_preflight)
    app.router.add_get("/missing/{tail:.*}", missing_page)
    app.router.add_get("/rendered/{kind}/{tail:.*}", rendered_record)
    app.router.add_get("/static/{name}", static_file)
    app.router.add_get("/favicon.ico", favicon)
    return app


def is_loopback(host: str) -> bool:
    """True for a name or address that only this machine can reach."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def machine_names() -> frozenset[str]:
    """This machine's host name, alone and as its first label (``box.lan`` and ``box``)."""
    name = socket.gethostname().lower()
    return frozenset(n for n in (name, name.split(".", 1)[0]) if n)
