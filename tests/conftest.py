"""Shared fixtures: a real aiohttp site on 127.0.0.1 and a one-call crawl into tmp_path."""

from __future__ import annotations

import collections
import html
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from archiver.config import Config, load_config
from archiver.manager import make_plugin_manager
from archiver.model import Crawl
from archiver.runner import run_crawl

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    ) -> None:
        if body is None:
            anchors = "".join(f'<a href="{html.escape(link)}">{html.escape(link)}</a>\n' for link in links)
            heading = f"<title>{html.escape(title or path)}</title>"
            body = f"<!doctype html><html><head>{heading}</head><body>{anchors}</body></html>"
        data = body.encode() if isinstance(body, str) else body

        async def serve(request: web.Request) -> web.StreamResponse:
            return web.Response(
                body=data, status=status, headers={"Content-Type": content_type, **(headers or {})}
            )

        self.handlers[path] = serve

    def redirect(self, path: str, target: str, status: int = 302) -> None:
        async def serve(request: web.Request) -> web.StreamResponse:
            return web.Response(status=status, headers={"Location": target})

        self.handlers[path] = serve

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        key = request.path_qs if request.path_qs in self.handlers else request.path
        self.hits[key] += 1
        handler = self.handlers.get(key)
        if handler is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self.in_flight -= 1

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
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


def make_config(tmp_path: Path, roots: Sequence[str], **overrides: Any) -> Config:
    values = {
        **TEST_DEFAULTS,
        "roots": tuple(roots),
        "output": str(tmp_path / "archive"),
        **overrides,
    }
    return load_config(None, values)


CrawlFn = Callable[..., Awaitable[Crawl]]


@pytest.fixture
def crawl_archive(tmp_path: Path) -> CrawlFn:
    """`await crawl_archive(roots, plugins=("links",), extra=[objects], **config)` -> Crawl.

    Only the named bundled plugins (and `extra` plugin objects) are loaded, never the
    ones installed on the machine; the archive is `tmp_path / "archive"`.
    """

    async def crawl(
        roots: str | Sequence[str],
        *,
        plugins: Sequence[str] = ("links",),
        extra: Sequence[object] = (),
        **overrides: Any,
    ) -> Crawl:
        if isinstance(roots, str):
            roots = [roots]
        config = make_config(tmp_path, roots, **overrides)
        pm = make_plugin_manager(
            autoload=False, modules=[f"archiver_plugins.{name}" for name in plugins], plugins=extra
        )
        return await run_crawl(config, pm)

    return crawl
