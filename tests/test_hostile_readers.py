"""Readers that survive any archive: bombs, hostile index lines, malformed records.

Every reader (`warc ls`, `warc check`, `export`, `reindex`, `reindex --warc`, `serve`)
runs as a real command in a child process limited in address space and CPU time; each
must finish, name the bad record by file and offset, process the rest of the archive
and stay under `PEAK_MB` of resident memory.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import ClientSession
from hostile_archive import MIB, record_bomb, run_archiver, write_warc, zeros_gzip

HOST = "http://h.test"
HTML = [("Content-Type", "text/html; charset=utf-8")]
PEAK_MB = 400
BOMB_MIB = 1024
"""The record bomb: 1 GiB of zeros in a 1 MB gzip member."""
GZIP_BODY_MIB = 256
"""The body bomb: a 256 KB gzip body of 256 MiB (stored as sent, Content-Encoding: gzip)."""


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = tmp_path_factory.mktemp("bombs") / "archive"
    pages = [
        (f"{HOST}/", b'<title>home</title><a href="/a">a</a> <a href="/gz">gz</a> zebra', HTML),
        (f"{HOST}/a", b"<title>a</title> zebra", HTML),
        (
            f"{HOST}/gz",
            zeros_gzip(b"<title>gz</title>", GZIP_BODY_MIB),
            [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
        ),
    ]
    write_warc(archive / "warc" / "a-good.warc.gz", pages)
    (archive / "warc" / "b-bomb.warc.gz").write_bytes(record_bomb(f"{HOST}/bomb", BOMB_MIB))
    return archive


FIGURES: dict[str, float] = {}


@pytest.mark.parametrize(
    "command",
    ["warc ls", "warc check", "export", "reindex", "reindex --warc"],
)
def test_bombs_are_reported_in_bounded_memory(bombs: Path, tmp_path: Path, command: str) -> None:
    bomb = bombs / "warc" / "b-bomb.warc.gz"
    args: list[str | Path] = {
        "warc ls": ["warc", "ls", bombs],
        "warc check": ["warc", "check", bombs],
        "export": ["export", bombs, tmp_path / "out"],
        "reindex": ["reindex", bombs],
        "reindex --warc": [
            "reindex",
            "--warc",
            bomb,
            bombs / "warc" / "a-good.warc.gz",
            "-o",
            tmp_path / "x",
        ],
    }[command]
    ran = run_archiver(*args, cwd=tmp_path)
    FIGURES[command] = ran.peak_mb
    print(f"{command}: exit {ran.code}, peak RSS {ran.peak_mb:.0f} MB")
    assert ran.code == 1, (ran.out, ran.err)
    assert "Traceback" not in ran.err, ran.err
    assert re.search(rf"{re.escape(str(bomb))}: offset 0: .*more than \d+ bytes", ran.out + ran.err), ran
    assert ran.peak_mb < PEAK_MB
    if command == "warc ls":
        assert f"{HOST}/a" in ran.out and f"{HOST}/gz" in ran.out
    if command == "export":
        assert (tmp_path / "out" / "h.test" / "a.html").is_file()
        assert f"{HOST}/gz: " in ran.err and "decompression cap" in ran.err
    if command.startswith("reindex"):
        assert "indexed 2 pages" in ran.out  # home and /a; /gz passes the decompression cap
        assert f"{HOST}/gz: decoded body exceeds" in ran.err


async def test_serve_stays_bounded_over_bombs(bombs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "archiver", "serve", str(bombs), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        match = re.search(rb"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        base = match.group(1).decode()
        async with ClientSession(auto_decompress=False) as session:

            async def get(path: str) -> tuple[int, dict[str, str], bytes]:
                async with session.get(base + path) as response:
                    return response.status, dict(response.headers), await response.read()

            status, _h, body = await asyncio.wait_for(get("browse"), 60)
            assert status == 200 and b"h.test" in body
            replays = [get(f"replay/20240101000000id_/{HOST}/gz") for _ in range(6)]
            replays += [get(f"replay/20240101000000/{HOST}/gz")]
            for status, headers, body in await asyncio.wait_for(asyncio.gather(*replays), 60):
                assert status == 200
                assert headers.get("Content-Encoding") == "gzip"  # sent as stored: the browser inflates
                assert len(body) < MIB
            status, _h, body = await asyncio.wait_for(get(f"replay/20240102000000id_/{HOST}/bomb"), 60)
            assert status == 404
        peak = _peak_mb(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(process.communicate(), 30)
    FIGURES["serve"] = peak
    print(f"serve: peak RSS {peak:.0f} MB")
    assert re.search(rb"b-bomb.warc.gz: offset 0: .*more than \d+ bytes", err), err
    assert peak < PEAK_MB


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found, status
    return int(found.group(1)) / 1024
