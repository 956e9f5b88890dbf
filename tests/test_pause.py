"""`archiver control pause` holds from the moment it is answered (issue 46); the server is the judge.

A slow site logs when each request arrives and when its answer leaves.  At the moment the
answer to `pause` appears in control.jsonl, the requests the server is still answering
plus those that arrive later are at most the requests the answer says were already sent:
nothing that had not reached the network when the pause was acknowledged starts.  Then
`resume` fetches every page, each exactly once.  For the SQLite frontier (one process) and
the Redis frontier (two processes, the pause sent to the worker: it holds the crawl too),
at 1, 10 and 32 tasks.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import time
from pathlib import Path

import pytest
from aiohttp import web
from cli_process import PLUGINS_ONLY, archiver, start_archiver
from redis_support import RedisServer, redis_server

from archiver.testing import Site

__all__ = ["redis_server"]

LATENCY = 0.2
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
ON_WIRE = re.compile(r"(\d+) requests? already sent finish|no request was on the wire")


class Arrivals:
    """Each request's arrival and the moment its answer left; the site links every page from /."""

    def __init__(self, site: Site, pages: int) -> None:
        self.requests: list[tuple[float, float | None, str]] = []
        self.paths = {f"/p/{i}" for i in range(pages)}
        site.page("/", links=sorted(self.paths))
        for path in self.paths:
            site.handler(path, self.serve)

    async def serve(self, request: web.Request) -> web.StreamResponse:
        index = len(self.requests)
        self.requests.append((time.monotonic(), None, request.path))
        await asyncio.sleep(LATENCY)
        self.requests[index] = (self.requests[index][0], time.monotonic(), request.path)
        return web.Response(text=f"<html><body>{request.path}</body></html>", content_type="text/html")

    def in_server_at(self, moment: float) -> int:
        """Requests arrived before `moment` whose answer had not left by then."""
        return sum(1 for start, end, _ in self.requests if start <= moment and (end is None or end > moment))

    def arrived_after(self, moment: float) -> int:
        return sum(1 for start, _, _ in self.requests if start > moment)


async def acknowledged(archive: Path, *command: str) -> tuple[str, float]:
    """Send `archiver control ARCHIVE COMMAND`; its answer and when it appeared in control.jsonl."""
    control = archive / "control.jsonl"
    start = control.stat().st_size if control.exists() else 0
    sender = asyncio.create_task(archiver("control", archive, *command))
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "no answer"
        if sender.done():
            raise AssertionError(f"no answer: {sender.result()}")
        written = control.read_bytes()[start:] if control.exists() else b""
        lines = [json.loads(line) for line in written.splitlines(keepends=True) if line.endswith(b"\n")]
        answers = [line for line in lines if "answer" in line]
        if answers:
            seen_at = time.monotonic()
            break
        await asyncio.sleep(0.002)
    code, out = await sender
    assert code == 0 and out == answers[0]["message"], out
    return out, seen_at


def on_wire(answer: str) -> int:
    found = ON_WIRE.search(answer)
    assert found is not None, answer
    return int(found.group(1) or 0)


async def until(condition, seconds: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def pause_then_resume(
    server: Arrivals, processes: list[asyncio.subprocess.Process], archive: Path, tasks: int
) -> None:
    await until(lambda: len(server.requests) >= 2 * tasks * len(processes) + 1)
    answer, acked = await acknowledged(archive, "pause")
    assert answer.startswith("paused: ") and answer.endswith("; nothing new starts"), answer
    sent = on_wire(answer)
    await asyncio.sleep(4 * LATENCY + 0.5)
    late = server.arrived_after(acked)
    assert server.in_server_at(acked) + late <= sent, (answer, server.in_server_at(acked), late)
    assert all(end is not None for _, end, _ in server.requests)  # what was sent has finished
    stalled = len(server.requests)
    await asyncio.sleep(0.5)
    assert len(server.requests) == stalled, "requests arrived while paused"
    code, out = await archiver("control", archive, "resume")
    assert (code, out) == (0, "resumed")
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), 90)
    assert codes == [0] * len(processes)
    fetched = collections.Counter(path for _, _, path in server.requests)
    assert set(fetched) == server.paths
    assert max(fetched.values()) == 1, [path for path, n in fetched.items() if n > 1]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tasks", [1, 10, 32])
async def test_pause_stops_new_requests_at_once_sqlite(site: Site, tmp_path: Path, tasks: int) -> None:
    server = Arrivals(site, pages=10 + 4 * tasks)  # as many left as the pause waits for
    archive = tmp_path / "a"
    politeness = ["--ignore-robots", "--delay", "0", "--per-host-concurrency", "64"]
    crawl = await start_archiver(
        "crawl", site.url("/"), "-o", archive, *politeness, "--max-tasks", str(tasks), *PLUGINS,
        cwd=tmp_path, env={PLUGINS_ONLY: "1"},
    )  # fmt: skip
    await pause_then_resume(server, [crawl], archive, tasks)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tasks", [1, 10, 32])
async def test_pause_from_one_process_holds_a_shared_crawl(
    site: Site, redis_server: RedisServer, tmp_path: Path, tasks: int
) -> None:
    server = Arrivals(site, pages=10 + 8 * tasks)
    crawl_id = f"pause{tasks}"
    shared = ["--frontier", redis_server.url, "--crawl-id", crawl_id, "--plugin", "archiver_plugins.redis"]
    politeness = ["--ignore-robots", "--delay", "0", "--per-host-concurrency", "64"]
    first = await start_archiver(
        "crawl", site.url("/"), "-o", tmp_path / "w0", *politeness, "--max-tasks", str(tasks),
        *PLUGINS, *shared, cwd=tmp_path, env={PLUGINS_ONLY: "1"},
    )  # fmt: skip
    client = redis_server.client()
    try:
        await until(lambda: client.exists(f"archiver:{{{crawl_id}}}:config"))
        worker = await start_archiver(
            "worker", "-o", tmp_path / "w1", "--max-tasks", str(tasks), *PLUGINS, *shared,
            cwd=tmp_path, env={PLUGINS_ONLY: "1"},
        )  # fmt: skip
        await until(lambda: client.hlen(f"archiver:{{{crawl_id}}}:workers") >= 2)
    finally:
        client.close()
    await pause_then_resume(server, [first, worker], tmp_path / "w1", tasks)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("verb", ["stop", "host"])
async def test_stop_and_host_pause_hold_at_once_and_nothing_is_fetched_twice(
    site: Site, tmp_path: Path, verb: str
) -> None:
    tasks = 10
    server = Arrivals(site, pages=10 + 4 * tasks)
    archive = tmp_path / "a"
    politeness = ["--ignore-robots", "--delay", "0", "--per-host-concurrency", "64"]
    args = [*politeness, "--max-tasks", str(tasks), *PLUGINS]
    crawl = await start_archiver(
        "crawl", site.url("/"), "-o", archive, *args, cwd=tmp_path, env={PLUGINS_ONLY: "1"}
    )
    await until(lambda: len(server.requests) >= 2 * tasks + 1)
    command = ["stop"] if verb == "stop" else ["host", site.host, "pause"]
    answer, acked = await acknowledged(archive, *command)
    sent = on_wire(answer)
    expected = "stopping: " if verb == "stop" else f"host {site.host} paused: "
    assert answer.startswith(expected) and answer.endswith("nothing new starts"), answer
    await asyncio.sleep(4 * LATENCY + 0.5)
    assert server.in_server_at(acked) + server.arrived_after(acked) <= sent, answer
    if verb == "stop":
        assert await asyncio.wait_for(crawl.wait(), 30) == 3
        code, out = await archiver(
            "crawl", "--resume", archive, *PLUGINS, cwd=tmp_path, env={PLUGINS_ONLY: "1"}
        )
        assert code == 0, out
    else:
        stalled = len(server.requests)
        await asyncio.sleep(0.5)
        assert len(server.requests) == stalled, "requests reached the paused host"
        code, out = await archiver("control", archive, "host", site.host, "resume")
        assert (code, out) == (0, f"host {site.host} resumed")
        assert await asyncio.wait_for(crawl.wait(), 60) == 0
    fetched = collections.Counter(path for _, _, path in server.requests)
    assert set(fetched) == server.paths
    assert max(fetched.values()) == 1, [path for path, n in fetched.items() if n > 1]
