"""Several web hosts at once on loopback addresses (127.0.0.2, 127.0.0.3, ...), one port.

Each host is a small tree of pages (page k links pages 2k+1 and 2k+2; with `fan`, the home
page links every page), and the server keeps
what the politeness tests judge: the arrival time of every request per host, and the most
requests a host had in flight at once.  A host can be given a robots.txt, a latency, a
`429` with Retry-After for one path, pages that never answer, or paths whose first requests
have their connection closed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import itertools
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

FIRST = int(ipaddress.IPv4Address("127.0.0.2"))


@dataclass
class Host:
    """One host of `ManyHosts`: its pages, its manners, and what it saw."""

    address: str
    pages: int = 10
    latency: float = 0.0
    fan: bool = False
    robots: str | None = None
    busy_path: str | None = None
    """Answered 429 with ``Retry-After: busy_seconds`` the first time it is asked for."""
    busy_seconds: int = 2
    busy_everywhere: bool = False
    """Every page is answered 429 the first time it is asked for (after the home page)."""
    hang_from: int | None = None
    """Pages numbered this or above never answer."""
    resets: dict[str, int] = field(default_factory=dict)
    """Path -> how many of its first requests have their connection closed, with no answer."""
    arrivals: list[float] = field(default_factory=list)
    requests: list[tuple[float, str]] = field(default_factory=list)
    """(arrival time, path) of every request."""
    paths: collections.Counter[str] = field(default_factory=collections.Counter)
    connections: list[asyncio.BaseTransport] = field(default_factory=list)
    """The connection of every request (one entry per request)."""
    in_flight: int = 0
    max_in_flight: int = 0
    port: int = 0

    def url(self, path: str = "/") -> str:
        return f"http://{self.address}:{self.port}{path}"

    def page_urls(self) -> set[str]:
        return {self.url(page_path(k)) for k in range(self.pages)}

    def gaps(self) -> list[float]:
        times = sorted(self.arrivals)
        return [b - a for a, b in itertools.pairwise(times)]


def page_path(k: int) -> str:
    return "/" if k == 0 else f"/p{k}"


class ManyHosts:
    """`count` hosts served by one aiohttp application; see the module docstring."""

    def __init__(self, count: int) -> None:
        self.hosts = [Host(str(ipaddress.IPv4Address(FIRST + i))) for i in range(count)]
        self._by_address = {host.address: host for host in self.hosts}
        self._runner: web.AppRunner | None = None
        self.release = asyncio.Event()
        """Set at the end of a test: the pages that never answer give up."""
        self.max_lag = 0.0
        """The longest the server's event loop was held (a loaded machine): arrival times are
        taken in the handler, so two requests can look closer than they were by this much."""
        self._ticker: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            self.max_lag = max(self.max_lag, time.monotonic() - before - 0.01)

    def slack(self, tolerance: float) -> float:
        """What a gap measured here may fall short of the crawler's by: `tolerance` plus the lag."""
        return tolerance + self.max_lag

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        host = self._by_address[(request.host or "").rsplit(":", 1)[0]]
        host.arrivals.append(time.monotonic())
        host.requests.append((host.arrivals[-1], request.path))
        host.paths[request.path] += 1
        if request.transport is not None:
            host.connections.append(request.transport)
        host.in_flight += 1
        host.max_in_flight = max(host.max_in_flight, host.in_flight)
        try:
            response = await self._answer(host, request.path, request.transport)
            if host.resets:
                # no kept-alive connection, so each try of the client is one request here (a
                # client may silently retry a request whose kept-alive connection was closed)
                response.force_close()
            return response
        finally:
            host.in_flight -= 1

    async def _answer(
        self, host: Host, path: str, transport: asyncio.BaseTransport | None
    ) -> web.StreamResponse:
        if path == "/robots.txt":
            if host.robots is None:
                raise web.HTTPNotFound()
            return web.Response(text=host.robots, content_type="text/plain")
        if host.latency:
            await asyncio.sleep(host.latency)
        if host.paths[path] <= host.resets.get(path, 0):
            assert transport is not None
            transport.abort()
            raise web.HTTPInternalServerError()  # never sent: the connection is gone
        first_time = host.paths[path] == 1
        if first_time and (path == host.busy_path or (host.busy_everywhere and path != "/")):
            return web.Response(status=429, headers={"Retry-After": str(host.busy_seconds)})
        k = 0 if path == "/" else int(path[2:]) if path[2:].isdigit() else -1
        if not 0 <= k < host.pages:
            raise web.HTTPNotFound()
        if host.hang_from is not None and k >= host.hang_from:
            await self.release.wait()
        if host.latency:
            await asyncio.sleep(host.latency)
        children = range(1, host.pages) if host.fan and k == 0 else (2 * k + 1, 2 * k + 2)
        links = "".join(f'<a href="{page_path(c)}">{c}</a> ' for c in children if c < host.pages)
        return web.Response(text=f"<html><body>page {k} {links}</body></html>", content_type="text/html")

    async def start(self) -> None:
        self._ticker = asyncio.create_task(self._tick())
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        for _attempt in range(20):
            port = _free_port(self.hosts[0].address)
            try:
                for host in self.hosts:
                    await web.TCPSite(self._runner, host.address, port).start()
            except OSError:
                await self._runner.cleanup()
                await self._runner.setup()
                continue
            for host in self.hosts:
                host.port = port
            return
        raise OSError("no port free on every address")

    async def close(self) -> None:
        self.release.set()
        if self._ticker is not None:
            self._ticker.cancel()
        if self._runner is not None:
            await self._runner.cleanup()


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def many_hosts(count: int) -> AsyncIterator[ManyHosts]:
    server = ManyHosts(count)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@contextlib.asynccontextmanager
async def in_flight_totals(server: ManyHosts) -> AsyncIterator[list[int]]:
    """Requests in flight across every host, sampled every 10 ms while the block runs."""
    totals: list[int] = []

    async def sample() -> None:
        while True:
            totals.append(sum(host.in_flight for host in server.hosts))
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    try:
        yield totals
    finally:
        sampler.cancel()
