"""`archiver control` steers a crawl running in another process; the server is the judge.

One crawl of a slow site, steered verb by verb: after `pause` no request arrives, after
`exclude` no URL of the pattern is requested and the queue no longer holds them, after
`delay 1` the gaps at the server are at least a second, after `tasks 1` one request at a
time; then kill -9 and a resume that keeps the changes.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import signal
import time
import tomllib
from pathlib import Path

from aiohttp import web
from archiver_plugins.web.status import crawl_status
from cli_process import PLUGINS_ONLY, archiver, start_archiver

from archiver.testing import Site

PAGES = 120
EXCLUDED = re.compile(r"^/p/[5-9]\d$")
PLAIN = [
    "--ignore-robots",
    "--delay",
    "0",
    "--plugin",
    "archiver_plugins.links",
    "--plugin",
    "archiver_plugins.warc",
]


class Recorder:
    """The site's pages, each answering after `latency`; every request's start, end and path."""

    def __init__(self, site: Site, latency: float) -> None:
        self.requests: list[tuple[float, float, str]] = []
        self.in_flight = 0
        self.most_at_once: list[tuple[float, int]] = []
        site.page("/", links=[f"/p/{i}" for i in range(PAGES)])
        for i in range(PAGES):
            site.handler(f"/p/{i}", self.serve(latency))

    def serve(self, latency: float):  # type: ignore[no-untyped-def]
        async def handle(request: web.Request) -> web.StreamResponse:
            start = time.monotonic()
            self.in_flight += 1
            self.most_at_once.append((start, self.in_flight))
            try:
                await asyncio.sleep(latency)
            finally:
                self.in_flight -= 1
            self.requests.append((start, time.monotonic(), request.path))
            return web.Response(text=f"<html><body>{request.path}</body></html>", content_type="text/html")

        return handle

    def started_after(self, moment: float) -> list[tuple[float, float, str]]:
        return sorted(r for r in self.requests if r[0] >= moment)


async def start_crawl(site: Site, archive: Path, cwd: Path, *extra: str) -> asyncio.subprocess.Process:
    args = ["crawl", site.url("/"), "-o", archive, *PLAIN, *extra]
    return await start_archiver(*args, cwd=cwd, env={PLUGINS_ONLY: "1"})


async def until(condition, seconds: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_every_verb_on_a_running_crawl_then_a_resume_keeps_the_changes(
    site: Site, tmp_path: Path
) -> None:
    server = Recorder(site, latency=0.3)
    archive = tmp_path / "a"
    crawl = await start_crawl(site, archive, tmp_path, "--max-tasks", "3")
    await until(lambda: len(server.requests) >= 6)

    code, out = await archiver("control", archive, "pause", cwd=tmp_path)
    assert code == 0 and out.startswith("paused: "), out
    paused_at = time.monotonic()
    await asyncio.sleep(1.5)
    assert [r for r in server.requests if r[0] > paused_at + 0.3] == []  # in flight then: done, none new
    code, out = await archiver("control", archive, "resume", cwd=tmp_path)
    assert (code, out) == (0, "resumed")
    await until(lambda: any(r[0] > paused_at + 1.5 for r in server.requests))

    code, out = await archiver("control", archive, "exclude", r"/p/[5-9]\d$", cwd=tmp_path)
    assert code == 0 and re.fullmatch(r"exclude '/p/\[5-9\]\\\\d\$': \d+ queued URLs dropped", out), out
    excluded_at = time.monotonic()
    dropped = int(out.rsplit(": ", 1)[1].split()[0])
    assert dropped > 30

    code, out = await archiver("control", archive, "tasks", "1", cwd=tmp_path)
    assert (code, out) == (0, "tasks 1 workers")
    one_at_a_time = time.monotonic() + 0.5  # requests in flight may finish
    code, out = await archiver("control", archive, "delay", "1", cwd=tmp_path)
    assert (code, out) == (0, "delay 1 s between two requests to a host")
    slow_from = time.monotonic() + 0.5
    await asyncio.sleep(3.5)
    starts = [start for start, _, _ in server.started_after(slow_from)]
    assert len(starts) >= 2
    assert all(b - a >= 0.95 for a, b in itertools.pairwise(starts)), starts
    assert max(n for at, n in server.most_at_once if at > one_at_a_time) == 1
    code, out = await archiver("control", archive, "delay", "0.2", cwd=tmp_path)
    assert code == 0, out

    crawl.send_signal(signal.SIGKILL)
    await crawl.wait()
    saved = tomllib.loads((archive / "crawl.toml").read_text())
    assert saved["crawl"]["exclude"] == [r"/p/[5-9]\d$"] and saved["politeness"]["delay"] == 0.2
    assert saved["crawl"]["max_tasks"] == 1
    code, out = await archiver("control", archive, "pause", cwd=tmp_path)
    assert code == 1 and out.endswith(
        "no crawl is running in " + str(archive) + ": start or resume it with archiver crawl"
    )

    resumed_at = time.monotonic()
    code, out = await archiver(
        "crawl", "--resume", archive, "--plugin", "archiver_plugins.links", cwd=tmp_path
    )
    assert code == 0, out
    after = server.started_after(resumed_at)
    assert after, "the resume fetched nothing"
    starts = [start for start, _, _ in after]
    assert all(b - a >= 0.18 for a, b in itertools.pairwise(starts))
    fetched = [path for _, _, path in server.requests]
    assert not [p for start, _, p in server.requests if start > excluded_at + 0.5 and EXCLUDED.match(p)]
    kept = {f"/p/{i}" for i in range(PAGES)} - {
        p for p in (f"/p/{i}" for i in range(PAGES)) if EXCLUDED.match(p)
    }
    assert kept <= set(fetched)
    log = (archive / "crawl-log.jsonl").read_text()
    assert "added by archiver control at" in log and '"outcome": "control"' in log
    code, out = await archiver("why", archive, site.url("/p/77"), cwd=tmp_path)
    assert "added by archiver control at" in out, out


async def test_a_paused_host_gets_nothing_until_resumed(site: Site, tmp_path: Path) -> None:
    server = Recorder(site, latency=0.05)
    archive = tmp_path / "a"
    crawl = await start_crawl(site, archive, tmp_path, "--max-tasks", "2")
    await until(lambda: len(server.requests) >= 4)
    code, out = await archiver("control", archive, "host", site.host, "pause", cwd=tmp_path)
    assert code == 0 and out.startswith(f"host {site.host} paused: "), out
    assert out.endswith("; nothing new starts"), out
    held_at = time.monotonic()
    await asyncio.sleep(2.0)
    assert [r for r in server.requests if r[0] > held_at + 0.3] == []
    code, out = await archiver("control", archive, "host", site.host, "resume", cwd=tmp_path)
    assert code == 0, out
    assert await asyncio.wait_for(crawl.wait(), 60) == 0
    assert len({path for _, _, path in server.requests}) == PAGES


async def test_bad_commands_are_one_line_errors(site: Site, tmp_path: Path) -> None:
    site.page("/", "<p>one</p>")
    code, out = await archiver("crawl", site.url("/"), "-o", tmp_path / "a", *PLAIN, cwd=tmp_path)
    assert code == 0, out
    for args, expected in (
        (["jump"], "unknown control verb 'jump'"),
        (["delay", "soon"], "delay 'soon': expected seconds"),
        (["exclude", "("], "exclude '(': not a regular expression"),
        (["tasks", "0"], "tasks '0': expected a whole number from 1 to 10000"),
    ):
        code, out = await archiver("control", tmp_path / "a", *args, cwd=tmp_path)
        assert code == 2 and out == f"archiver: error: {out.split('error: ', 1)[1]}", out
        assert expected in out and len(out.splitlines()) == 1, out


async def test_status_names_a_calendar_trap_and_its_exclude_line_stops_it(site: Site, tmp_path: Path) -> None:
    requests: list[tuple[float, str]] = []

    async def calendar(request: web.Request) -> web.StreamResponse:
        requests.append((time.monotonic(), request.path))
        await asyncio.sleep(0.05)
        year = int(request.path.split("/")[2] or "2030")
        links = [f"/calendar/{y}/{m}/" for y in range(year + 1, year + 5) for m in range(1, 13)]
        body = "".join(f'<a href="{link}">{link}</a>' for link in links)
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    site.page("/", links=["/calendar/", *(f"/doc/{i}" for i in range(20))])
    for i in range(20):
        site.page(f"/doc/{i}", f"<p>doc {i}</p>")
    site.handler("/calendar/", calendar)
    for year in range(2031, 2200):
        for month in range(1, 13):
            site.handler(f"/calendar/{year}/{month}/", calendar)
    archive = tmp_path / "a"
    crawl = await start_crawl(site, archive, tmp_path, "--max-tasks", "2", "--max-depth", "1000")
    await until(lambda: len(requests) >= 40)
    await asyncio.sleep(1.0)  # the frontier commits its counts every half second
    code, out = await archiver("status", archive, cwd=tmp_path)
    assert code == 0, out
    assert "/calendar/{year}/{month}/" in out, out
    page = crawl_status("a", archive, None)  # the web UI's status page says the same
    assert any("/calendar/{year}/{month}/" in line for line in page.queue), page.queue
    drop = [line.strip() for line in out.splitlines() if "to drop them:" in line]
    assert drop, out
    line = drop[0]
    command = line.split("to drop them: ", 1)[1]
    assert command == f"archiver control {archive} exclude '/calendar/\\d{{4}}/\\d{{1,2}}/'", command
    pattern = command.rsplit(" ", 1)[1].strip("'")
    code, out = await archiver("control", archive, "exclude", pattern, cwd=tmp_path)
    assert code == 0 and "queued URLs dropped" in out, out
    stopped_at = time.monotonic()
    assert await asyncio.wait_for(crawl.wait(), 60) == 0
    assert [path for at, path in requests if at > stopped_at + 0.5] == []
    code, out = await archiver("status", archive, cwd=tmp_path)
    assert "complete" in out.splitlines()[0], out
