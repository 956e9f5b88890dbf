"""What a first crawl and the first commands after it tell a new user."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from archiver.cli import main

QUICK = ["--delay", "0", "--max-tries", "1", "--disable-plugin", "index", "--disable-plugin", "sitemap"]


async def run_cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def closed_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port


async def test_unreachable_root_fails_and_stays_resumable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"http://127.0.0.1:{await closed_port()}/"
    archive = tmp_path / "a"
    assert await run_cli("crawl", root, "-o", str(archive), *QUICK) == 1
    err = capsys.readouterr().err
    assert "no root URL could be fetched" in err and "unreachable" in err
    assert json.loads((archive / "report.json").read_text())["complete"] is False
    assert await run_cli("status", str(archive), "--json") == 0
    assert json.loads(capsys.readouterr().out)["state"] == "resumable"
    # running it again resumes (and fails again), it is not "a complete crawl"
    assert await run_cli("crawl", root, "-o", str(archive), *QUICK) == 1
    captured = capsys.readouterr()
    assert "complete crawl" not in captured.out + captured.err


async def test_dry_run_calls_an_unreachable_root_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"http://127.0.0.1:{await closed_port()}/"
    assert await run_cli("crawl", root, "-o", str(tmp_path / "a"), "--dry-run", *QUICK) == 0
    out = capsys.readouterr().out
    assert "verdict: unreachable" in out
    assert "out of scope" not in out
