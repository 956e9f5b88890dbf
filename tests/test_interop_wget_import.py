"""`archiver reindex --warc` on a WARC file wget wrote: the archive it makes is searched, served and exported.

The archive holds the WARC file (copied, hard-linked or symlinked) with its CDXJ, so a
search hit replays, `/browse` lists the site, `export` and `warc check` read it.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import shutil
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.index.search import search
from archiver_plugins.replay.app import make_app
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.cli import main
from archiver.testing import Site

STYLESHEET = "p { color: rgb(1, 2, 3); }\n"


def wget_path() -> str:
    path = shutil.which("wget")
    if path is None:
        message = "wget is not installed (apt-get install wget)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


async def wget_warc(site: Site, folder: Path) -> Path:
    """Mirror `site` with `wget --warc-file`; returns the WARC file it wrote."""
    site.page(
        "/",
        '<!doctype html><title>Lighthouse</title><link rel="stylesheet" href="/style.css">'
        '<p>The lighthouse keeper polishes the lens.</p><a href="/tides.html">tides</a>',
    )
    site.page("/tides.html", "<!doctype html><title>Tides</title><p>Spring tides flood the causeway.</p>")
    site.page("/style.css", STYLESHEET, content_type="text/css")
    process = await asyncio.create_subprocess_exec(
        wget_path(),
        "--recursive",
        "--level=2",
        "--page-requisites",
        "--no-verbose",
        "-e",
        "robots=off",
        f"--warc-file={folder / 'lighthouse'}",
        "--no-warc-keep-log",
        f"--directory-prefix={folder / 'files'}",
        site.url("/"),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    warc = folder / "lighthouse.warc.gz"
    assert warc.is_file()
    return warc


async def archiver(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def test_a_wget_warc_reindexed_is_served_exported_and_checked(site: Site, tmp_path: Path) -> None:
    warc = await wget_warc(site, tmp_path)
    archive = tmp_path / "w.archive"
    assert await archiver("reindex", "--warc", str(warc), "-o", str(archive)) == 0

    held = archive / "warc" / warc.name
    assert held.read_bytes() == warc.read_bytes() and not held.is_symlink()
    assert os.stat(held).st_ino != os.stat(warc).st_ino  # a copy: the archive stands alone
    assert site.url("/tides.html") in (archive / "warc" / "lighthouse.cdxj").read_text()
    assert await archiver("warc", "check", str(archive)) == 0

    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        found = await client.get("/search?q=causeway")
        body = await found.text()
        hit = re.search(r'class="title" href="([^"]+)"', body)
        assert found.status == 200 and hit, body
        replay = await client.get(hit.group(1).replace("&amp;", "&"))
        assert replay.status == 200 and "Spring tides flood the causeway." in await replay.text()
        browse = await client.get("/browse")
        assert browse.status == 200 and site.host in await browse.text()
    finally:
        await client.close()

    mirror = tmp_path / "mirror"
    assert await archiver("export", str(archive), str(mirror)) == 0
    pages = "".join(p.read_text(errors="replace") for p in mirror.rglob("*.html"))
    assert "The lighthouse keeper polishes the lens." in pages and "Spring tides" in pages
    assert any(p.read_text() == STYLESHEET for p in mirror.rglob("*.css"))

    # A second tool's WARC joins the archive; the index then covers both.
    second = tmp_path / "second.warc.gz"
    with second.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = b"<title>Harbour</title><p>Ferries leave the harbour at dawn.</p>"
        writer.write_record(
            writer.create_warc_record(
                "http://harbour.test/",
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=headers,
            )
        )
    assert await archiver("reindex", "--warc", str(second), "-o", str(archive)) == 0
    for word, url in (("ferries", "http://harbour.test/"), ("causeway", site.url("/tides.html"))):
        found = await asyncio.to_thread(search, archive, word)
        assert [hit.url for hit in found.hits] == [url]

    # Importing the same file again keeps it; a different file under the same name is refused.
    assert await archiver("reindex", "--warc", str(warc), "-o", str(archive)) == 0
    other = tmp_path / "other" / warc.name
    other.parent.mkdir()
    other.write_bytes(warc.read_bytes()[:-10])
    assert await archiver("reindex", "--warc", str(other), "-o", str(archive)) == 2
    assert held.read_bytes() == warc.read_bytes()


@pytest.mark.parametrize("link", ["hard", "symlink"])
async def test_reindex_links_the_warc_when_asked(site: Site, tmp_path: Path, link: str) -> None:
    warc = await wget_warc(site, tmp_path)
    archive = tmp_path / "w.archive"
    assert await archiver("reindex", "--warc", str(warc), "-o", str(archive), "--link", link) == 0
    held = archive / "warc" / warc.name
    if link == "hard":
        assert not held.is_symlink() and os.stat(held).st_ino == os.stat(warc).st_ino
    else:
        assert held.is_symlink() and held.resolve() == warc.resolve()
    assert await archiver("warc", "check", str(archive)) == 0
    assert await archiver("export", str(archive), str(tmp_path / "mirror")) == 0
