"""A crawl is polite as a whole, however many processes share it (issue 40); the server is the judge.

The same site crawled by one process on the SQLite frontier and by three processes on one
Redis frontier: a host whose robots.txt asks `Crawl-delay: 1` never sees two requests closer
than 0.95 s, and its robots.txt is fetched once for the whole crawl; a host that answered
503 with `Retry-After: 2` sees no request from any process during those two seconds; and
`archiver control host H pause` stops every process's requests to H.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import time
from pathlib import Path

import pytest
from aiohttp import web
from cli_process import PLUGINS_ONLY, archiver, start_archiver
from redis_support import RedisServer, redis_server

from archiver.testing import Site

__all__ = ["redis_server"]

PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]


class Logged:
    """Every request's arrival (and, for pages, when its answer left), by path."""

    def __init__(self, site: Site, pages: int, latency: float = 0.0) -> None:
        self.arrivals: list[tuple[float, str]] = []
        self.answered: dict[str, float] = {}
        self.latency = latency
        self.paths = {f"/p/{i}" for i in range(pages)}
        site.handler("/", self.serve)
        for path in self.paths:
            site.handler(path, self.serve)

    async def serve(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append((time.monotonic(), request.path))
        if self.latency:
            await asyncio.sleep(self.latency)
        links = "".join(f'<a href="{p}">{p}</a>' for p in sorted(self.paths)) if request.path == "/" else ""
        self.answered[request.path] = time.monotonic()
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")


async def crawl_shared(
    site: Site, tmp_path: Path, frontier: str, server: RedisServer | None, crawl_id: str, *options: str
) -> list[asyncio.subprocess.Process]:
    """`archiver crawl` alone (SQLite), or with two `archiver worker`s on Redis, 2 tasks each."""
    env = {PLUGINS_ONLY: "1"}
    shared: list[str] = []
    if frontier == "redis":
        assert server is not None
        shared = ["--frontier", server.url, "--crawl-id", crawl_id, "--plugin", "archiver_plugins.redis"]
    args = ["--max-tasks", "2", *PLUGINS, *shared]
    first = await start_archiver(
        "crawl", site.url("/"), "-o", tmp_path / "w0", *options, *args, cwd=tmp_path, env=env
    )
    processes = [first]
    if server is not None:
        client = server.client()
        try:
            deadline = time.monotonic() + 30
            while not client.exists(f"archiver:{{{crawl_id}}}:config"):
                assert time.monotonic() < deadline and first.returncode is None
                await asyncio.sleep(0.02)
        finally:
            client.close()
        for n in (1, 2):
            processes.append(
                await start_archiver("worker", "-o", tmp_path / f"w{n}", *args, cwd=tmp_path, env=env)
            )
        client = server.client()
        try:  # each process reads its commands once it has joined
            while client.hlen(f"archiver:{{{crawl_id}}}:workers") < 3:
                assert time.monotonic() < deadline and all(p.returncode is None for p in processes)
                await asyncio.sleep(0.02)
        finally:
            client.close()
        await asyncio.sleep(0.5)
    return processes


async def finish(processes: list[asyncio.subprocess.Process], seconds: float = 90) -> None:
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), seconds)
    assert codes == [0] * len(processes)


@pytest.fixture(params=["sqlite", "redis"])
def frontier(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.timeout(120)
async def test_crawl_delay_holds_for_the_whole_crawl_and_robots_txt_is_fetched_once(
    site: Site, tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    server = Logged(site, pages=6)
    robots: list[float] = []

    async def robots_txt(_: web.Request) -> web.StreamResponse:
        robots.append(time.monotonic())
        server.arrivals.append((time.monotonic(), "/robots.txt"))
        return web.Response(text="User-agent: *\nCrawl-delay: 1\n")

    site.handler("/robots.txt", robots_txt)
    redis = request.getfixturevalue("redis_server") if frontier == "redis" else None
    processes = await crawl_shared(site, tmp_path, frontier, redis, "delay", "--per-host-concurrency", "4")
    await finish(processes)
    assert len(robots) == 1, robots
    paths = [path for _, path in server.arrivals]
    assert set(paths) >= server.paths | {"/"} and len(paths) == len(set(paths)), paths
    starts = sorted(at for at, _ in server.arrivals)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.95, gaps


@pytest.mark.timeout(120)
async def test_no_process_asks_a_host_within_its_retry_after(
    site: Site, tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    server = Logged(site, pages=40, latency=0.05)
    refused: list[float] = []
    serve = server.serve

    async def busy_once(req: web.Request) -> web.StreamResponse:
        if not refused:
            server.arrivals.append((time.monotonic(), req.path))
            refused.append(time.monotonic())
            return web.Response(status=503, headers={"Retry-After": "2"})
        return await serve(req)

    site.handler("/p/5", busy_once)
    redis = request.getfixturevalue("redis_server") if frontier == "redis" else None
    options = ["--ignore-robots", "--delay", "0.05", "--per-host-concurrency", "4"]
    processes = await crawl_shared(site, tmp_path, frontier, redis, "busy", *options)
    await finish(processes)
    assert refused, "the 503 was never asked for"
    told = refused[0]
    within = [round(at - told, 3) for at, _ in server.arrivals if told < at < told + 1.9]
    assert within == [], within
    fetched = collections.Counter(path for _, path in server.arrivals)
    assert set(fetched) == server.paths | {"/"} and fetched["/p/5"] == 2


@pytest.mark.timeout(120)
async def test_a_host_paused_through_one_process_gets_nothing_from_any(
    site: Site, tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    server = Logged(site, pages=150, latency=0.1)
    redis = request.getfixturevalue("redis_server") if frontier == "redis" else None
    options = ["--ignore-robots", "--delay", "0", "--per-host-concurrency", "8"]
    processes = await crawl_shared(site, tmp_path, frontier, redis, "hold", *options)
    deadline = time.monotonic() + 60
    while len(server.arrivals) < 20:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    target = tmp_path / f"w{len(processes) - 1}"
    code, out = await archiver("control", target, "host", site.host, "pause")
    assert code == 0 and out.startswith(f"host {site.host} paused: "), out
    held_at = time.monotonic()
    await asyncio.sleep(1.5)
    assert [path for at, path in server.arrivals if at > held_at] == []
    code, out = await archiver("control", target, "host", site.host, "resume")
    assert (code, out) == (0, f"host {site.host} resumed")
    await finish(processes)
    fetched = collections.Counter(path for _, path in server.arrivals)
    assert set(fetched) == server.paths | {"/"} and max(fetched.values()) == 1
