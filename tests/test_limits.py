"""--max-bytes, --max-time and --min-free-disk stop a crawl cleanly, resumable; a resume with a
higher limit goes on.  Real subprocesses against a site served by the test's event loop; what
the server saw and what the archive holds are the judges."""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from archiver_plugins.archive_reader.reader import open_archive
from cli_process import PLUGINS_ONLY
from cli_process import archiver as run
from terminal import run_on_terminal, screen_lines

from archiver.testing import Site

PLAIN = [
    "--ignore-robots",
    "--delay",
    "0",
    "--plugin",
    "archiver_plugins.links",
    "--plugin",
    "archiver_plugins.warc",
]
LIMIT_EXIT = 3


async def archiver(*args: str | Path, cwd: Path) -> tuple[int, str]:
    # a crawl with the links and WARC plugins only (PLAIN); other commands with them all
    return await run(*args, cwd=cwd, env={PLUGINS_ONLY: "1" if args[0] == "crawl" else ""})


def archived_paths(archive: Path) -> collections.Counter[str]:
    return collections.Counter(
        urlsplit(c.url).path for c in open_archive(archive / "warc").iter_captures() if c.status is not None
    )


def report(archive: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((archive / "report.json").read_text())
    return data


def noise(size: int) -> str:
    """Text that gzip cannot shrink much, so the WARC files grow as the bytes arrive."""
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()


async def test_max_bytes_stops_then_a_higher_limit_goes_on(site: Site, tmp_path: Path) -> None:
    site.fan(60, body=f"<html><body><p>{noise(10_000)}</p></body></html>")
    archive = tmp_path / "a"
    code, out = await archiver(
        "crawl", site.url("/"), "-o", archive, *PLAIN, "--max-bytes", "100K", cwd=tmp_path
    )
    assert code == LIMIT_EXIT, out
    assert (
        "Stopped at a limit: max_bytes 100.0 kB received; to go on, raise it (every run of this crawl"
        f" counts): `archiver crawl --resume {archive} --max-bytes SIZE`." in out
    ), out
    first = report(archive)
    assert first["complete"] is False and str(first["limit_reached"]).startswith("max_bytes 100.0 kB")
    assert 10 <= sum(site.hits.values()) < 40, site.hits
    code, output = await asyncio.to_thread(run_on_terminal, ["status", str(archive)], tmp_path, 60)
    lines = screen_lines(output)
    assert lines[0] == f"{archive}: resumable", output  # not a bare --resume, which would stop at once
    assert "  stopped at a limit: max_bytes 100.0 kB received" in lines, output
    used = [line for line in lines if line.startswith("  used: received ")]
    assert len(used) == 1 and used[0].endswith(" of max_bytes 100.0 kB"), output
    assert (
        f"  to go on, raise it (every run of this crawl counts): `archiver crawl --resume {archive}" in output
    )
    code, out = await archiver("status", archive, "--json", cwd=tmp_path)
    assert json.loads(out)["limit_use"][0].startswith("received ")

    # the same limit again: the earlier run counts, nothing more is fetched
    hits = sum(site.hits.values())
    code, out = await archiver(
        "crawl", site.url("/"), "-o", archive, *PLAIN, "--max-bytes", "100K", cwd=tmp_path
    )
    assert code == LIMIT_EXIT, out
    assert "(with the earlier runs of this crawl)" in out
    assert sum(site.hits.values()) == hits

    code, out = await archiver("crawl", "--resume", archive, "--max-bytes", "2G", cwd=tmp_path)
    assert code == 0, out
    assert report(archive)["complete"] is True
    paths = archived_paths(archive)
    assert set(paths) == {"/", *(f"/p{i}" for i in range(60))}
    assert max(paths.values()) == 1 and max(site.hits.values()) == 1


async def test_max_time_stops_within_the_limit_then_resumes(site: Site, tmp_path: Path) -> None:
    site.fan(200, delay=0.1)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", archive, *PLAIN, "--max-tasks", "2", "--max-time", "2s"]
    code, out = await archiver(*args, cwd=tmp_path)
    assert code == LIMIT_EXIT, out
    assert "Stopped at a limit: max_time 2s reached; to go on, raise it" in out, out
    assert f"`archiver crawl --resume {archive} --max-time DURATION`" in out
    assert report(archive)["wall_seconds"] < 2 + 5 + 2  # the limit, the grace period, start-up
    fetched = sum(site.hits.values())
    assert 5 <= fetched < 150
    code, out = await archiver("crawl", "--resume", archive, "--max-time", "10m", cwd=tmp_path)
    assert code == 0, out
    paths = archived_paths(archive)
    assert len(paths) == 201 and max(paths.values()) == 1


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 12 MiB tmpfs: the free space the crawl sees is real and shrinks as it writes."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        message = f"cannot mount a tmpfs (needs root): {done.stderr.decode().strip()}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_min_free_disk_stops_before_the_disk_fills(
    site: Site, small_disk: Path, tmp_path: Path
) -> None:
    site.page("/", links=[f"/p{i}" for i in range(120)])
    for i in range(120):  # each its own body: identical ones would be stored once (revisits)
        site.page(f"/p{i}", f"<html><body><p>{noise(100_000)}</p></body></html>")
    archive = small_disk / "a"
    args = ["crawl", site.url("/"), "-o", archive, *PLAIN, "--max-tasks", "2", "--min-free-disk", "6M"]
    code, out = await archiver(*args, cwd=tmp_path)
    assert code == LIMIT_EXIT, out
    assert "Stopped at a limit: min_free_disk:" in out and "under the floor of 6.0 MB" in out, out
    assert "to go on, free some space on the archive's disk" in out and "--min-free-disk SIZE" in out, out
    assert "raise" not in out
    assert "Traceback" not in out
    paths = archived_paths(archive)
    assert 10 <= len(paths) < 100
    code, out = await archiver("warc", "check", archive, cwd=tmp_path)
    assert code == 0, out
    code, out = await archiver("status", archive, cwd=tmp_path)
    assert "stopped at a limit: min_free_disk" in out, out
    # the floor lowered: the crawl goes on from where it stopped
    code, out = await archiver("crawl", "--resume", archive, "--min-free-disk", "3M", cwd=tmp_path)
    assert code in (0, LIMIT_EXIT), out  # done, or stopped at the lower floor
    more = archived_paths(archive)
    assert len(more) > len(paths) and max(more.values()) == 1
