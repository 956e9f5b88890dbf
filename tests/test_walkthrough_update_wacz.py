"""A site crawled, then updated (`crawl --update`: its unchanged pages answer 304), then exported
as WACZ: the WACZ's index must lead a replay tool to each page's stored body.

The site is a folder served by Python's own `http.server`, which sends `Last-Modified` and
answers `If-Modified-Since` with 304, as a user's first try would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main

NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
QUICK = ["--delay", "0", "--max-tries", "1", "-q", "--disable-plugin", "index", "--disable-plugin", "sitemap"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text('<title>Home</title><a href="a.html">a</a> <a href="b.html">b</a>')
    (root / "a.html").write_text("<title>A</title><p>apples</p>")
    (root / "b.html").write_text("<title>B</title><p>bananas</p>")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "-d", str(root), "-b", "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline and server.poll() is None, "http.server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(10)


async def run(*args: str) -> None:
    assert await asyncio.to_thread(main, list(args)) == 0, args


async def test_wacz_of_an_updated_archive_indexes_the_stored_pages_not_the_304s(
    served: str, tmp_path: Path
) -> None:
    archive, wacz = tmp_path / "site.archive", tmp_path / "site.wacz"
    await run("crawl", served, "-o", str(archive), *QUICK)
    await run("crawl", "--update", str(archive), *QUICK)
    await run("export", str(archive), str(wacz), "-q")

    with zipfile.ZipFile(wacz) as package:
        not_modified = set()
        for name in package.namelist():
            if name.startswith("archive/"):
                with package.open(name) as stream:
                    for record in ArchiveIterator(stream):
                        if record.rec_headers.get_header("WARC-Profile") == NOT_MODIFIED:
                            not_modified.add(record.rec_headers.get_header("WARC-Target-URI"))
        index = gzip.decompress(package.read("indexes/index.cdx.gz")).decode().splitlines()
        pages = [json.loads(line) for line in package.read("pages/pages.jsonl").decode().splitlines()[1:]]

    urls = {served + name for name in ("", "a.html", "b.html")}
    assert urls <= not_modified  # the update's 304s are in the WACZ's WARC files
    captures: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for line in index:
        _key, stamp, fields = line.split(" ", 2)
        found = json.loads(fields)
        captures.setdefault(found["url"], []).append((stamp, found))
    assert {page["url"] for page in pages} == urls
    for page in pages:
        # what ReplayWeb.page and pywb look up: the capture nearest to the page's time, and the
        # newest one when a URL is opened without a time; a 304 line replays as an empty 304
        wanted = page["ts"].replace("-", "").replace(":", "").replace("T", "")[:14]
        _stamp, nearest = min(captures[page["url"]], key=lambda c: abs(int(c[0]) - int(wanted)))
        _stamp, newest = max(captures[page["url"]], key=lambda c: c[0])
        assert nearest["status"] == newest["status"] == "200", (page, nearest, newest)
