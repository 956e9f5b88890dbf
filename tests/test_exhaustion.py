"""A full disk or a spent open-files limit ends the crawl in one line that says how to go on.

The crawl runs in a child process: into a small tmpfs (mounted for the test, which needs
root) or under a low RLIMIT_NOFILE.  What it archived before stopping must be kept, and
the resume command it names must finish the crawl once the cause is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.testing import Site

PAGES = 60


def big_site(site: Site) -> None:
    site.page("/", links=[f"/p{i}" for i in range(PAGES)])
    for i in range(PAGES):
        site.page(f"/p{i}", f"<html><p>{os.urandom(40_000).hex()}</p></html>")


def run_archiver(*args: str, open_files: int | None = None) -> subprocess.CompletedProcess[str]:
    limit = (
        ""
        if open_files is None
        else f"resource.setrlimit(resource.RLIMIT_NOFILE, ({open_files}, {open_files}));"
    )
    code = f"import resource, sys; {limit} from archiver.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], cause: str, archive: Path) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "never awaited" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("archiver: error:")]
    assert len(errors) == 1, result.stderr
    assert cause in errors[0]
    assert f"archiver crawl --resume {archive}" in errors[0]
    assert len(result.stderr.strip().splitlines()) <= 2, result.stderr


def responses(archive: Path) -> set[str]:
    found = set()
    for path in (archive / "warc").glob("*.warc.gz"):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "response":
                    found.add(record.rec_headers.get_header("WARC-Target-URI"))
    return found


@pytest.fixture
def small_disk() -> Iterator[Path]:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("mounting a tmpfs needs root")
        pytest.skip("mounting a tmpfs needs root")
    place = Path(tempfile.mkdtemp(prefix="archiver-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(place)], check=True)
    try:
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)
        with contextlib.suppress(OSError):
            place.rmdir()


async def test_a_full_disk_ends_the_crawl_in_one_line(site: Site, small_disk: Path) -> None:
    big_site(site)
    archive = small_disk / "a"
    # the free-space floor off: the disk really fills (the floor's own test is in test_limits.py)
    crawl = ("crawl", site.url("/"), "-o", str(archive), "--delay", "0", "-q", "--min-free-disk", "0")
    result = await _in_thread(run_archiver, *crawl)
    assert_one_line(result, "no space left on device", archive)
    kept = responses(archive)
    assert kept, "what was archived before the disk filled is kept"

    await asyncio.to_thread(subprocess.run, ["mount", "-o", "remount,size=200m", str(small_disk)], check=True)
    resumed = await _in_thread(run_archiver, "crawl", "--resume", str(archive), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert kept <= responses(archive)
    assert {site.url(f"/p{i}") for i in range(PAGES)} <= responses(archive)


async def test_too_many_open_files_ends_the_crawl_in_one_line(site: Site, tmp_path: Path) -> None:
    big_site(site)
    archive = tmp_path / "a"
    crawl = ("crawl", site.url("/"), "-o", str(archive), "--delay", "0", "-q", "--max-tasks", "20")
    result = await _in_thread(run_archiver, *crawl, open_files=16)
    assert_one_line(result, "too many open files", archive)
    resumed = await _in_thread(run_archiver, "crawl", "--resume", str(archive), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert {site.url(f"/p{i}") for i in range(PAGES)} <= responses(archive)


async def _in_thread(
    function: Callable[..., subprocess.CompletedProcess[str]], *args: str, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(function, *args, **kwargs)
