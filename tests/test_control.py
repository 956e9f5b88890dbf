"""`archiver control` steers a crawl running in another process; the server is the judge.

One crawl of a slow site, steered verb by verb: after `pause` no request arrives, after
`exclude` no URL of the pattern is requested and the queue no longer holds them, after
`delay 1` the gaps at the server are at least a second, after `tasks 1` one request at a
time; then kill -9 and a resume that keeps the changes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from aiohttp import web
from archiver_plugins.replay.status import crawl_status
from cli_process import PLUGINS_ONLY, archiver, start_archiver
from terminal import run_on_terminal, screen_lines, screen_text

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
        (["delay", "nan"], "delay 'nan': expected seconds from 0 to 86400"),
        (["delay", "inf"], "delay 'inf': expected seconds from 0 to 86400"),
        (["delay", "1e999"], "delay '1e999': expected seconds from 0 to 86400"),
        (["exclude", "a" * 70_000], "exclude: a command of 70"),
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


class Steering:
    """`archiver control pause` once the progress display shows, `resume` once the pause is
    acknowledged: `run_on_terminal`'s `meanwhile`, the commands run beside the crawl."""

    def __init__(self, archive: Path, cwd: Path) -> None:
        self.archive, self.cwd = archive, cwd
        self.sent: list[subprocess.Popen[bytes]] = []

    def __call__(self, shown: str) -> bool:
        text = screen_text(shown)
        if not self.sent and "crawling" in text:
            self.send("pause")
        elif len(self.sent) == 1 and "archiver control: paused" in text:
            self.send("resume")
            return True
        return False

    def send(self, verb: str) -> None:
        command = [sys.executable, "-m", "archiver", "control", str(self.archive), verb]
        self.sent.append(subprocess.Popen(command, cwd=self.cwd, stdout=subprocess.DEVNULL))


async def test_acknowledgements_are_notes_on_lines_of_their_own_above_the_display(
    site: Site, tmp_path: Path
) -> None:
    Recorder(site, latency=0.05)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", str(archive), *PLAIN, "--max-tasks", "1"]
    steering = Steering(archive, tmp_path)
    code, output = await asyncio.to_thread(run_on_terminal, args, tmp_path, 120, meanwhile=steering)
    assert [sent.wait(30) for sent in steering.sent] == [0, 0]
    assert code == 0, output[-2000:]
    lines = screen_lines(output)
    paused = [line for line in lines if "archiver control: paused" in line]
    assert len(paused) == 1 and paused[0].startswith("archiver: note: archiver control: paused: "), paused
    assert "archiver: note: archiver control: resumed" in lines
    assert not any("warning: archiver control" in line for line in lines), lines


async def test_status_says_who_paused_what_and_how_to_resume(site: Site, tmp_path: Path) -> None:
    server = Recorder(site, latency=0.05)
    archive = tmp_path / "a"
    crawl = await start_crawl(site, archive, tmp_path, "--max-tasks", "2", "--frontier", "sqlite")
    await until(lambda: len(server.requests) >= 4)
    code, out = await archiver("control", archive, "pause", cwd=tmp_path)
    assert code == 0, out
    code, out = await archiver("control", archive, "host", site.host, "pause", cwd=tmp_path)
    assert code == 0 and out.startswith(f"host {site.host} paused: "), out
    code, out = await archiver("control", archive, "host", "elsewhere.example", "pause", cwd=tmp_path)
    assert code == 0 and "elsewhere.example is not the host of a root" in out, out
    code, out = await archiver("status", archive, "--json", cwd=tmp_path)
    found = json.loads(out)
    assert found["state"] == "running" and found["paused"] is True and found["paused_at"], found
    assert set(found["paused_hosts"]) == {site.host, "elsewhere.example"}
    code, out = await archiver("status", archive, cwd=tmp_path)
    assert f"paused by `archiver control pause` at {found['paused_at']}" in out, out
    assert f"`archiver control {archive} resume` goes on" in out
    assert f"hosts paused by `archiver control`: {site.host} (since " in out
    for args in (["host", site.host, "resume"], ["host", "elsewhere.example", "resume"], ["resume"]):
        code, out = await archiver("control", archive, *args, cwd=tmp_path)
        assert code == 0, out
    code, out = await archiver("status", archive, "--json", cwd=tmp_path)
    found = json.loads(out)
    assert found["paused"] is False and "paused_hosts" not in found, found
    assert await asyncio.wait_for(crawl.wait(), 60) == 0


async def test_junk_in_the_control_file_leaves_the_crawl_listening(site: Site, tmp_path: Path) -> None:
    """Issue 42 points 4 and 9: a line over 64 KiB, a torn line and a NaN delay written into
    control.jsonl by hand are each skipped (answered when they name an id), and the commands
    sent after them are carried out: the server sees the pause, crawl.toml never holds NaN."""
    server = Recorder(site, latency=0.3)
    archive = tmp_path / "a"
    crawl = await start_crawl(site, archive, tmp_path, "--max-tasks", "2")
    try:
        await until(lambda: len(server.requests) >= 2)
        control_file = archive / "control.jsonl"
        with control_file.open("ab") as file:
            file.write(b'{"id": "0123abcd", "verb": "exclude", "args": ["' + b"x" * 200_000 + b'"]}\n')
            file.write(b'{"id": "0000ffff", "verb": "delay", "args": ["nan"], "at": ""}\n')
            file.write(b'{"id": "torn", "verb": "pa')  # a sender killed mid-write
        code, out = await archiver("control", archive, "pause", cwd=tmp_path)
        assert code == 0 and out.startswith("paused: "), out
        paused_at = time.monotonic()
        await asyncio.sleep(1.0)
        assert [r for r in server.requests if r[0] > paused_at + 0.4] == []
        answers = {
            record["answer"]: record
            for line in control_file.read_bytes().splitlines()
            if line.startswith(b'{"answer"') and (record := json.loads(line))
        }
        assert answers["0123abcd"]["ok"] is False and "over 65536 bytes" in answers["0123abcd"]["message"]
        assert answers["0000ffff"]["ok"] is False and "expected seconds" in answers["0000ffff"]["message"]
        code, out = await archiver("control", archive, "stop", cwd=tmp_path)
        assert code == 0, out
        await asyncio.wait_for(crawl.wait(), 30)
    finally:
        if crawl.returncode is None:
            crawl.send_signal(signal.SIGKILL)
            await crawl.wait()
    assert "nan" not in (archive / "crawl.toml").read_text()


def test_the_control_reader_reads_junk_once_and_never_whole(tmp_path: Path) -> None:
    """30 MB without a newline are passed over in bounded reads, once; what follows is read."""
    from archiver.control import LineReader, Overlong

    path = tmp_path / "control.jsonl"
    path.write_bytes(b"j" * 30_000_000)
    reader = LineReader(path, 0)
    assert list(reader.lines()) == []
    assert reader.offset == 30_000_000  # the next poll starts after it
    with path.open("ab") as file:
        file.write(b'junk end\n{"id": "ab", "verb": "pause", "args": []}\n')
    lines = list(reader.lines())
    assert isinstance(lines[0], Overlong) and lines[1:] == [b'{"id": "ab", "verb": "pause", "args": []}\n']
