"""The progress display on a real terminal of 80 columns: what bounds the pace, time left, stages."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import struct
import sys
import termios
from pathlib import Path

from aiohttp import web
from conftest import Site

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTH = 80
PAGES = 30


def run_on_terminal(args: list[str], cwd: Path, timeout: float) -> tuple[int, str]:
    """Run archiver with its output on a pseudo-terminal WIDTH columns wide; (exit code, text)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, WIDTH, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "CI", "TERM")}
    env["TERM"] = "xterm"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(leader)
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(follower, fd)
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, "-m", "archiver", *args], env)
    os.close(follower)
    chunks: list[bytes] = []
    import select
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done and not ready:
            break
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0) if not done else (done, status)
    os.close(leader)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def screen_lines(output: str) -> list[str]:
    text = _ESCAPE.sub("\n", output)
    return [line for line in re.split(r"[\r\n]+", text) if line.strip()]


async def test_progress_names_the_pace_and_the_catch_up_in_80_columns(site: Site, tmp_path: Path) -> None:
    words = " ".join(f"word{n}" for n in range(2000))

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=f"<html><body><p>{words}</p></body></html>", content_type="text/html")

    site.page("/", links=[f"/p{i}" for i in range(PAGES)])
    for i in range(PAGES):
        site.handler(f"/p{i}", page)
    config = tmp_path / "c.toml"
    config.write_text("[plugins.index]\ncrawl_share = 0.01\nbatch_size = 5\n")
    args = ["crawl", site.url("/"), "-o", "a", "-c", str(config), "--delay", "0.1", "--ignore-robots"]
    code, output = await asyncio.to_thread(run_on_terminal, args, tmp_path, 120)
    assert code == 0, output[-2000:]
    lines = screen_lines(output)
    assert lines and max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert not [line for line in lines if line.endswith("…")], "a line was cut"
    polite = f"polite: 0.1 s between requests to {site.host} (set by --delay or the config)"
    assert polite in lines
    assert any("--delay SECONDS" in line for line in lines)
    assert any(re.search(r"about \d+:\d\d:\d\d left", line) for line in lines)
    assert any(line.startswith("index catch-up") for line in lines)
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    caught_up = report["after_crawl"]["caught_up"]["index"]
    assert 0 < caught_up <= PAGES + 1 and report["after_crawl"]["seconds"] > 0
    assert f"Then index caught up {caught_up:,} pages in" in output
