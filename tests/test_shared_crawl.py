"""A crawl shared through Redis as users run it: at a terminal, workers started first, a
Redis server that loses the crawl, a second process that would crawl by other rules.

Real subprocesses against a site served by this test's event loop and a real redis-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web
from redis_support import RedisServer, redis_server
from terminal import WIDTH, run_on_terminal, screen_lines
from test_distributed import CRAWLERS, build_site, captures, crawler_env, launch, wait_for_crawl, write_config

from archiver.testing import Site

__all__ = ["redis_server"]


@pytest.mark.timeout(150)
async def test_a_shared_crawl_and_its_worker_at_a_terminal(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    """The default plugins, the progress display on: both show the whole crawl and exit 0.

    The worker starts before the crawl exists and waits for it."""
    expected = build_site(site, 120, delay=0.02)
    config = write_config(tmp_path / "crawl.toml", max_tasks=4)
    shared = ["--frontier", redis_server.url, "--crawl-id", "tty"]
    worker_args = ["worker", "-o", "part-2", *shared]
    crawl_args = ["crawl", site.url("/"), "-o", "part-1", "-c", str(config), *shared]
    worker = asyncio.create_task(asyncio.to_thread(run_on_terminal, worker_args, tmp_path, 120))
    await asyncio.sleep(1.0)
    assert not worker.done(), "the worker did not wait for its crawl"
    crawl_code, crawl_out = await asyncio.to_thread(run_on_terminal, crawl_args, tmp_path, 120)
    worker_code, worker_out = await worker
    assert crawl_code == 0, crawl_out[-3000:]
    assert worker_code == 0, worker_out[-3000:]
    assert "Waiting up to 60 s for crawl 'tty' to start" in worker_out
    for output in (crawl_out, worker_out):
        assert "archiver: error" not in output, output[-3000:]
        lines = screen_lines(output)
        assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
        assert any(line.startswith("whole crawl: ") and " done, " in line for line in lines), lines
        assert any(line.startswith("this process: ") for line in lines), lines
    archives = ("part-1", "part-2")
    fetched = [path for archive in archives for path, _ in captures(tmp_path / archive)]
    # the sitemap plugin of each process looks for sitemaps (robots.txt, /sitemap.xml)
    pages = sorted(path for path in fetched if path not in ("/robots.txt", "/sitemap.xml"))
    assert pages == sorted(expected)


def test_a_worker_gives_up_waiting_in_one_line(redis_server: RedisServer, tmp_path: Path) -> None:
    from archiver.cli import main

    started = time.monotonic()
    args = ["worker", "--frontier", redis_server.url, "--crawl-id", "late", "-o", str(tmp_path / "w")]
    assert main([*args, "--wait", "0.6", "-q"]) == 2
    assert time.monotonic() - started >= 0.6


async def both_working(
    site: Site, server: RedisServer, crawl_id: str, processes: list[asyncio.subprocess.Process], hits: int
) -> None:
    """Until the crawl and its worker are both registered and the site has served `hits` requests."""
    client = server.client()
    deadline = time.monotonic() + 40
    try:
        while sum(site.hits.values()) < hits or client.hlen(f"archiver:{{{crawl_id}}}:workers") < 2:
            assert time.monotonic() < deadline and all(p.returncode is None for p in processes)
            await asyncio.sleep(0.02)
    finally:
        client.close()


@pytest.mark.timeout(150)
async def test_redis_restarted_empty_stops_every_process_with_what_was_lost(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 600, delay=0.03)
    archives = [tmp_path / "w0", tmp_path / "w1"]
    config = write_config(tmp_path / "crawl.toml", lease_seconds=3, max_tasks=4)
    processes = await launch(redis_server, site.url("/"), archives, config, "amnesia")
    await both_working(site, redis_server, "amnesia", processes, hits=40)
    assert redis_server.process is not None
    redis_server.process.kill()  # no persistence: it comes back empty
    redis_server.process.wait()
    redis_server.start()
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), 90)
    for code, archive in zip(codes, archives, strict=True):
        log = archive.with_suffix(".log").read_text(errors="replace")
        last = log.strip().splitlines()[-1]
        assert code == 1, log[-3000:]
        assert last.startswith("archiver: error: crawl 'amnesia' vanished from the Redis frontier"), last
        assert "queued URLs" in last and "archiver merge" in last, last
        assert not list((archive / "warc").glob("*.open"))
    fetched = {path for archive in archives for path, _ in captures(archive)}
    assert 40 <= len(fetched) < len(expected)
    # the fetches in flight when Redis went were finished and archived before the processes stopped
    assert fetched == set(site.hits)
    for archive in archives:
        assert '"complete": false' in (archive / "report.json").read_text()


@pytest.mark.timeout(150)
async def test_a_second_crawl_with_other_settings_is_refused(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    """The first crawl cannot end while the second is tried: one of its pages is answered
    only then (at load 15-20 it had finished before the second started, and the message
    differed: issue 42 point 17)."""
    expected = build_site(site, 300, delay=0.03)
    release = asyncio.Event()
    answer = site.handlers["/p/1"]

    async def held(request: web.Request) -> web.StreamResponse:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(release.wait(), 25)  # under the crawl's first-byte timeout
        return await answer(request)

    site.handler("/p/1", held)
    config = write_config(tmp_path / "crawl.toml", max_tasks=4, timeout=60.0)
    shared = ["--frontier", redis_server.url, "--crawl-id", "scope", *CRAWLERS]
    [first] = await launch(redis_server, site.url("/"), [tmp_path / "first"], config, "scope")
    await wait_for_crawl(redis_server, "scope")

    async def join(*extra: str) -> tuple[int, str]:
        args = ["crawl", *extra, "-o", str(tmp_path / "second"), "-c", str(config), *shared]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "archiver",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=crawler_env(),
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None
        return process.returncode, out.decode(errors="replace").strip()

    code, out = await join(site.url("/"), "--max-depth", "0")
    assert code == 2, out
    assert out.splitlines()[-1].startswith("archiver: error: crawl 'scope' at"), out
    assert "runs with crawl.max_depth = " in out and "not 0" in out and "archiver worker" in out
    code, out = await join(site.url("/p/5"))
    assert code == 2, out
    assert "runs with crawl.roots = " in out, out
    assert first.returncode is None, "the first crawl ended while /p/1 was held"
    release.set()
    assert await asyncio.wait_for(first.wait(), 120) == 0
    assert {path for path, _ in captures(tmp_path / "first")} == expected


@pytest.mark.timeout(150)
async def test_control_through_one_worker_reaches_every_process(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 300, delay=0.05)
    archives = [tmp_path / "w0", tmp_path / "w1"]
    config = write_config(tmp_path / "crawl.toml", max_tasks=2)
    processes = await launch(redis_server, site.url("/"), archives, config, "steer")
    await both_working(site, redis_server, "steer", processes, hits=20)

    async def control(*args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "archiver",
            "control",
            str(archives[1]),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, out
        return out.decode().strip()

    assert (await control("pause")).startswith("paused")
    await asyncio.sleep(1.0)  # the other process reads the command within a second; in flight ends
    hits = sum(site.hits.values())
    await asyncio.sleep(1.5)
    assert sum(site.hits.values()) == hits, "a process kept fetching while the crawl was paused"
    assert await control("resume") == "resumed"
    answer = await control("exclude", r"/p/2\d\d$")
    assert answer.startswith("exclude ") and "queued URLs dropped" in answer, answer
    seen_then = set(site.hits)
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), 120)
    assert codes == [0, 0], [a.with_suffix(".log").read_text()[-2000:] for a in archives]
    late = {path for path in set(site.hits) - seen_then if path.startswith("/p/2") and len(path) == 6}
    assert late == set(), late
    fetched = {path for archive in archives for path, _ in captures(archive)}
    assert {f"/p/{i}" for i in range(200)} <= fetched | seen_then
    assert fetched < expected
    for archive in archives:
        assert r"/p/2\\d\\d$" in (archive / "crawl.toml").read_text()
