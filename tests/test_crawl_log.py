"""The crawl log after a SIGKILL: every page marked done or archived has its line."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from archiver_plugins.archive_reader.reader import open_archive

from archiver.testing import Site

PAGES = 400


def logged(archive: Path) -> Counter[str]:
    lines = (archive / "crawl-log.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return Counter(r["url"] for r in records if r.get("outcome") == "fetched")


def done_in_state(archive: Path) -> set[str]:
    db = sqlite3.connect(archive / "state.sqlite")
    try:
        return {url or key for key, url in db.execute("SELECT key, url FROM urls WHERE state = 2")}
    finally:
        db.close()


async def crawl(site: Site, archive: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        site.url("/"),
        "-o",
        str(archive),
        "--delay",
        "0",
        "--ignore-robots",
        "--max-tasks",
        "4",
        "--disable-plugin",
        "index",
        "--disable-plugin",
        "sitemap",
        "-q",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def test_sigkill_loses_no_line_and_resume_writes_the_missing_ones(site: Site, tmp_path: Path) -> None:
    site.fan(PAGES, delay=0.01, body="<html><body>a page</body></html>")
    archive = tmp_path / "a"
    proc = await crawl(site, archive)
    for _ in range(300):
        await asyncio.sleep(0.05)
        if site.hits.total() > 120:
            break
    proc.send_signal(signal.SIGKILL)
    await asyncio.wait_for(proc.wait(), 30)
    assert site.hits.total() < PAGES, "the crawl ended before it was killed"

    done = done_in_state(archive)
    assert done, "nothing was marked done before the kill"
    assert done <= set(logged(archive)), "pages marked done have no crawl-log line"

    proc = await crawl(site, archive)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    lines = logged(archive)
    archived = {c.url for c in open_archive(archive).iter_captures() if c.status == 200}
    assert archived == {site.url("/")} | {site.url(f"/p{i}") for i in range(PAGES)}
    assert archived <= set(lines), "archived pages without a crawl-log line"
    assert max(lines.values()) == 1, "a page logged twice"


async def test_status_separates_taken_from_fetched(site: Site, tmp_path: Path) -> None:
    site.fan(PAGES, delay=0.5, body="<html><body>slow</body></html>")
    archive = tmp_path / "a"
    proc = await crawl(site, archive)
    seen: dict[str, object] = {}
    try:
        for _ in range(200):
            await asyncio.sleep(0.1)
            status = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "archiver", "status", str(archive), "--json"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if status.returncode == 0:
                seen = json.loads(status.stdout)
                # past the first commits, where the home page is alone in flight (its links not queued yet)
                if seen["state"] == "running" and seen["fetching"] and seen["in_flight"] > 1:
                    break
        text = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "archiver", "status", str(archive)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
    assert seen["state"] == "running"
    assert 0 < seen["fetching"] <= 4 < seen["in_flight"]  # 4 workers; a leased batch waits in memory
    assert "taken from the queue" in text.stdout and "being fetched" in text.stdout


async def test_web_status_page_counts_as_the_report_does(site: Site, tmp_path: Path) -> None:
    from archiver_plugins.replay.status import LogFollower, crawl_status

    site.page("/", links=["/a", "/gone", "/missing"])
    site.page("/a", "<html>a</html>")
    archive = tmp_path / "a"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(archive), "--delay", "0",
        "--disable-plugin", "index", "--disable-plugin", "sitemap", "-q",
    )  # fmt: skip
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    assert site.hits["/robots.txt"] == 1  # a 404 too, but no page
    report = json.loads((archive / "report.json").read_text())
    status = crawl_status("a", archive, LogFollower(archive / "crawl-log.jsonl"))
    assert status.log is not None
    assert dict(status.log.statuses) == report["by_status_class"] == {"2xx": 2, "4xx": 2}
    assert status.frontier is not None and status.frontier["done"] == 4
