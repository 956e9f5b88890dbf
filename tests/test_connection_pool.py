"""The connections kept for each host's next request: how many, and which are let go.

A crawl of thousands of hosts keeps an idle connection per host for minutes
(`KEEPALIVE_SECONDS`), so the pool is bounded by the open files the process may hold: past
`max_idle` the connection idle longest is closed, and the server sees it go.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import textwrap

import aiohttp
from many_hosts import ManyHosts, many_hosts

from archiver.fetcher import KEEPALIVE_SECONDS, QUIET_BEFORE_REUSE, _PeerRecordingConnector


async def _get(session: aiohttp.ClientSession, url: str) -> None:
    async with session.get(url) as response:
        assert response.status == 200
        await response.read()


async def _wait_closed(server: ManyHosts, expected: list[bool]) -> list[bool]:
    """Whether the latest connection of each host is closed, as the server sees it."""
    closed: list[bool] = []
    for _ in range(200):
        closed = [host.connections[-1].is_closing() for host in server.hosts]
        if closed == expected:
            break
        await asyncio.sleep(0.01)
    return closed


async def test_past_max_idle_the_connection_idle_longest_is_closed() -> None:
    async with asyncio.timeout(30), many_hosts(4) as server:
        connector = _PeerRecordingConnector(max_idle=2, limit=4, keepalive_timeout=KEEPALIVE_SECONDS)
        async with aiohttp.ClientSession(connector=connector) as session:
            for host in server.hosts:
                await _get(session, host.url("/"))
            # the first two hosts' connections were let go, the last two are kept
            assert await _wait_closed(server, [True, True, False, False]) == [True, True, False, False]
            await asyncio.sleep(QUIET_BEFORE_REUSE + 0.1)
            kept = server.hosts[3].connections[-1]
            await _get(session, server.hosts[3].url("/p1"))
            assert server.hosts[3].connections[-1] is kept
            gone = server.hosts[0].connections[-1]
            await _get(session, server.hosts[0].url("/p1"))
            assert server.hosts[0].connections[-1] is not gone
            # that new connection, released, pushed out the oldest of those kept (host 2's)
            assert await _wait_closed(server, [False, True, True, False]) == [False, True, True, False]


async def test_connections_the_server_closed_leave_the_pool_without_counting() -> None:
    async with asyncio.timeout(30), many_hosts(3) as server:
        connector = _PeerRecordingConnector(max_idle=2, limit=4, keepalive_timeout=KEEPALIVE_SECONDS)
        async with aiohttp.ClientSession(connector=connector) as session:
            await _get(session, server.hosts[0].url("/"))
            server.hosts[0].connections[-1].close()  # the server lets its idle connection go
            for _ in range(200):
                if not any(proto.is_connected() for proto in connector._idle):
                    break
                await asyncio.sleep(0.01)
            await _get(session, server.hosts[1].url("/"))
            await _get(session, server.hosts[2].url("/"))
            # the dead one went first: both live ones are kept
            assert await _wait_closed(server, [True, False, False]) == [True, False, False]
            assert len(connector._idle) == 2


def test_the_open_files_limit_is_raised_and_half_of_it_goes_to_idle_connections() -> None:
    script = textwrap.dedent(
        """
        import resource
        from archiver.fetcher import idle_connections_allowed
        print(idle_connections_allowed(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        """
    )
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def run(soft: int, hard: int) -> tuple[int, int]:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

        out = subprocess.run(
            [sys.executable, "-c", script],
            preexec_fn=limit,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ},
        )
        assert out.returncode == 0, out.stderr
        allowed, raised = out.stdout.split()
        return int(allowed), int(raised)

    top = hard if hard != resource.RLIM_INFINITY else 65_536
    allowed, raised = run(min(256, hard), hard)
    assert raised == min(top, 65_536)
    assert allowed == min(raised // 2, 16_384)
    # a hard limit of 256: nothing to raise, 128 idle connections at most
    assert run(256, 256) == (128, 256)
