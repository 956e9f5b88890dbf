"""Test helpers for archiver and its plugins: a loopback web site, a crawl in one call, records by hand.

archiver installs this module as a pytest plugin (entry point group ``pytest11``), so the
tests of any plugin get its fixtures without a conftest.py:

* ``site``, ``other_site``: a `Site`, a real aiohttp server on 127.0.0.1 (an ephemeral
  port) serving the pages a test declares; stopped, with a bounded shutdown, after the test;
* ``crawl_archive``: ``await crawl_archive(roots, plugins=..., **settings)`` runs a whole
  crawl into ``tmp_path / "archive"`` and returns the finished `Crawl` (its ``archive``
  holds ``report.json``, read with `read_report`).

The async fixtures need pytest-asyncio (or pytest-aiohttp) in ``asyncio_mode = "auto"``.
`make_page`, `make_crawl` and `make_config` build the records a hook receives, to test one
hook without a crawl.  ``import archiver`` never imports this module, and it imports
aiohttp and the engine only when a test first needs them, so being installed costs
other projects' test runs nothing.
"""

from __future__ import annotations

import asyncio
import collections
import html
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .config import Config, load_config
from .layout import REPORT_NAME
from .model import Crawl, Headers, Page

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestServer

__all__ = [
    "TEST_DEFAULTS",
    "CrawlFn",
    "Handler",
    "Resource",
    "Site",
    "crawl_archive",
    "make_config",
    "make_crawl",
    "make_page",
    "other_site",
    "plugin_module",
    "read_report",
    "site",
]

Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]

SHUTDOWN_SECONDS = 5.0
"""How long a stopping `Site` waits for requests still being answered before it cancels them."""


@dataclass(frozen=True)
class Resource:
    """What `Site.serve` answers for one path besides an HTML body: a status, a type, headers."""

    body: str | bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


class Site:
    """A small web site whose pages tests declare; every request is counted in `hits`."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.hits: collections.Counter[str] = collections.Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.server: TestServer | None = None

    def url(self, path: str = "/") -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}{path}"

    @property
    def host(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"

    def handler(self, path: str, fn: Handler) -> None:
        self.handlers[path] = fn

    def serve(self, pages: Mapping[str, str | bytes | Resource]) -> None:
        """Serve each path's HTML body, or its `Resource`."""
        for path, answer in pages.items():
            if isinstance(answer, Resource):
                self.page(
                    path,
                    answer.body,
                    content_type=answer.content_type,
                    status=answer.status,
                    headers=dict(answer.headers),
                )
            else:
                self.page(path, answer)

    def page(
        self,
        path: str,
        body: str | bytes | None = None,
        *,
        links: Iterable[str] = (),
        title: str | None = None,
        content_type: str = "text/html; charset=utf-8",
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Serve `body`, or an HTML page titled `title` linking each of `links`, after `delay` seconds."""
        from aiohttp.web import Response

        if body is None:
            anchors = "".join(f'<a href="{html.escape(link)}">{html.escape(link)}</a>\n' for link in links)
            heading = f"<title>{html.escape(title or path)}</title>"
            body = f"<!doctype html><html><head>{heading}</head><body>{anchors}</body></html>"
        data = body.encode() if isinstance(body, str) else body

        async def serve(request: web.Request) -> web.StreamResponse:
            if delay:
                await asyncio.sleep(delay)
            return Response(
                body=data, status=status, headers={"Content-Type": content_type, **(headers or {})}
            )

        self.handlers[path] = serve

    def redirect(self, path: str, target: str, status: int = 302) -> None:
        from aiohttp.web import Response

        async def serve(request: web.Request) -> web.StreamResponse:
            return Response(status=status, headers={"Location": target})

        self.handlers[path] = serve

    def fan(self, pages: int, *, delay: float = 0.0, body: str = "<html><body>a page</body></html>") -> None:
        """A home page linking ``/p0`` ... ``/p{pages-1}``, each answering `body` after `delay` seconds."""
        self.page("/", links=[f"/p{i}" for i in range(pages)])
        for i in range(pages):
            self.page(f"/p{i}", body, delay=delay)

    def loose_web(self, pages: int, *, delay: float = 0.0, images: bool = False) -> None:
        """`pages` HTML pages ``/p{i}`` in a loose web, with redirects ``/r{i}`` into it and missing pages.

        Page i reads ``Word{i} here.`` and links three other pages; every tenth links a
        redirect, every 25th a missing page (and a PNG image when `images`).  A crawl from
        ``/p0`` reaches every page.
        """
        for i in range(pages):
            links = {f"/p{(i * 7 + 3) % pages}", f"/p{(i + 1) % pages}", f"/p{(2 * i) % pages}"}
            if i % 10 == 0:
                links.add(f"/r{i}")
                self.redirect(f"/r{i}", f"/p{(i * 3 + 1) % pages}")
            if i % 25 == 0:
                links.add(f"/missing{i % 3}")
                if images:
                    links.add(f"/img{i}.png")
                    self.page(f"/img{i}.png", b"\x89PNG", content_type="image/png")
            anchors = "".join(f'<a href="{link}">{link}</a> ' for link in sorted(links))
            body = (
                f"<html><head><title>page {i}</title></head><body><p>Word{i} here.</p>{anchors}</body></html>"
            )
            self.page(f"/p{i}", body, delay=delay)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        from aiohttp.web import Response

        key = request.path_qs if request.path_qs in self.handlers else request.path
        self.hits[key] += 1
        handler = self.handlers.get(key)
        if handler is None:
            return Response(status=404, text="not found", content_type="text/plain")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self.in_flight -= 1

    async def start(self) -> None:
        from aiohttp.test_utils import TestServer
        from aiohttp.web import Application

        app = Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server(shutdown_timeout=SHUTDOWN_SECONDS)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    """A `Site` on 127.0.0.1, stopped after the test."""
    server = Site()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def other_site() -> AsyncIterator[Site]:
    """A second host (another port) for foreign-host and requisite tests."""
    server = Site()
    await server.start()
    yield server
    await server.close()


TEST_DEFAULTS: dict[str, Any] = {
    "delay": 0.0,
    "robots": False,
    "frontier": "memory",
    "retry_backoff": 0.01,
    "max_tries": 2,
    "timeout": 10.0,
    "first_byte_timeout": 5.0,
    "connect_timeout": 5.0,
    "per_host_concurrency": 16,
}
"""Settings that keep a test crawl fast and quiet: no politeness delay, no robots.txt, few retries."""


def make_config(tmp_path: Path, roots: Sequence[str], **overrides: Any) -> Config:
    """A checked `Config` crawling `roots` into ``tmp_path / "archive"`` with `TEST_DEFAULTS`."""
    values = {**TEST_DEFAULTS, "roots": tuple(roots), "output": str(tmp_path / "archive"), **overrides}
    return load_config(None, values)


def make_crawl(*roots: str, archive: Path = Path("unused"), **settings: Any) -> Crawl:
    """A `Crawl` as a hook receives it, for calling one hook by hand; `settings` are `Config` fields."""
    return Crawl(config=Config(roots=roots, **settings), archive=archive, roots=roots)


def make_page(
    url: str,
    body: str | bytes = b"",
    *,
    status: int = 200,
    content_type: str | None = "text/html; charset=utf-8",
    headers: Headers = (),
    encoding: str = "utf-8",
    **fields: Any,
) -> Page:
    """A fetched `Page` as a hook receives it: `body` is both the bytes received and the content.

    A str `body` is encoded with `encoding`; `content_type` (None for no such header) comes
    before `headers`; `fields` are any other `Page` fields (``depth``, ``fetched_at``, or
    ``content`` when the body is compressed).
    """
    data = body.encode(encoding) if isinstance(body, str) else body
    typed: Headers = (("Content-Type", content_type),) if content_type is not None else ()
    return Page(
        url=url,
        status=status,
        headers=typed + headers,
        encoding=encoding,
        **{"body": data, "content": data, **fields},
    )


def read_report(archive: Path) -> dict[str, Any]:
    """The ``report.json`` a crawl wrote into `archive`: totals, statuses, plugin counters."""
    report: dict[str, Any] = json.loads((archive / REPORT_NAME).read_text(encoding="utf-8"))
    return report


CrawlFn = Callable[..., Awaitable[Crawl]]


def installed_plugins() -> dict[str, str]:
    """Entry-point name -> module of every installed plugin, the bundled ones included."""
    from .manager import entry_points

    return {ep.name: ep.value for ep in entry_points()}


def plugin_module(name: str) -> str:
    """The module of the installed plugin called `name` (``links`` for the bundled link finder)."""
    try:
        return installed_plugins()[name]
    except KeyError:
        known = ", ".join(sorted(installed_plugins()))
        raise ValueError(f"no installed plugin {name!r} (installed: {known})") from None


@pytest.fixture
def crawl_archive(tmp_path: Path) -> CrawlFn:
    """`await crawl_archive(roots, plugins=("links",), modules=(), extra=[objects], **settings)` -> Crawl.

    Only the installed plugins named in `plugins` (by entry-point name: ``links``, ``warc``,
    ...), the `modules` named by import path and the `extra` plugin objects are loaded, never
    every plugin installed on the machine; the archive is
    ``tmp_path / "archive"`` and the settings are `TEST_DEFAULTS` with `settings` over them.
    `plugin_tables` are the ``[plugins.NAME]`` tables of the configuration file, by NAME.
    """

    async def crawl(
        roots: str | Sequence[str],
        *,
        plugins: Sequence[str] = ("links",),
        modules: Sequence[str] = (),
        extra: Sequence[object] = (),
        plugin_tables: Mapping[str, Mapping[str, Any]] | None = None,
        **settings: Any,
    ) -> Crawl:
        from .manager import make_plugin_manager
        from .runner import run_crawl

        if isinstance(roots, str):
            roots = [roots]
        if plugin_tables is not None:
            settings["plugins"] = {name: dict(table) for name, table in plugin_tables.items()}
        config = make_config(tmp_path, roots, **settings)
        names = [plugin_module(name) for name in plugins] + list(modules)
        pm = make_plugin_manager(autoload=False, modules=names, plugins=extra)
        return await run_crawl(config, pm)

    return crawl
