"""`archiver export --format zim`: a crawled site as a ZIM file, checked by the readers' own tools.

zimcheck runs every check (metadata, icon, main page, internal links); kiwix-serve serves
the file on 127.0.0.1 and is asked for the main page, a deep page, an image and a
full-text search; our own crawler then follows every link kiwix-serve shows: none is broken.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.mirror.export import ExportOptions, ExportResult, export_mirror
from cli_process import archiver
from mirror_site import build_site, png
from offline_tools import files_named, get, kiwix_serve, zimcheck
from PIL import Image

from archiver.errors import UsageError
from archiver.testing import CrawlFn, Site

PLUGINS = ("links", "warc")
BOOK = "site"
"""kiwix-serve names a book after its file: site.zim is served under /site/."""


async def export(archive: Path, output: Path, **options: object) -> ExportResult:
    chosen = ExportOptions(format="zim", **options)  # type: ignore[arg-type]
    return await asyncio.to_thread(export_mirror, archive, output, chosen)


async def crawled(site: Site, other: Site, crawl_archive: CrawlFn) -> Path:
    build_site(site, other)
    site.page("/favicon.ico", png(32, 32, (0, 90, 200)), content_type="image/png")
    site.page(
        "/docs/deep/chapter",
        "<html><head><title>Deep chapter</title></head><body><p>The quokka lives here.</p>"
        '<img src="/img/logo.png" alt="logo"></body></html>',
    )
    site.page("/docs/", links=["page", "/", "deep/chapter"], title="Docs")
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    return crawl.archive


def zim_errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if "[ERROR]" in line]


async def test_zim_passes_zimcheck_and_kiwix_serve_finds_pages_images_and_words(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawled(site, other_site, crawl_archive)
    zim = tmp_path / f"{BOOK}.zim"
    result = await export(archive, zim, title="Mirror test site")
    assert not result.errors
    assert result.bytes == zim.stat().st_size > 0
    assert not (tmp_path / f"{BOOK}.zim.partial").exists()

    checked = await asyncio.to_thread(zimcheck, zim)
    assert checked.returncode == 0 and not zim_errors(checked.stdout), checked.stdout

    host = site.host.replace(":", "+")
    with kiwix_serve(zim) as base:
        status, _, body = await asyncio.to_thread(get, f"{base}/{BOOK}/")
        assert status == 200 and b"<title>Home page</title>" in body  # the main page: the root
        deep = f"{base}/{BOOK}/{host}/docs/deep/chapter.html"
        status, kind, body = await asyncio.to_thread(get, deep)
        assert (status, kind.split(";")[0]) == (200, "text/html") and b"quokka" in body
        assert b'src="../../img/logo.png"' in body
        status, kind, body = await asyncio.to_thread(get, f"{base}/{BOOK}/{host}/img/logo.png")
        assert (status, kind, body) == (200, "image/png", png(4, 4, (200, 0, 0)))
        status, _, body = await asyncio.to_thread(get, f"{base}/search?content={BOOK}&pattern=quokka")
        assert status == 200
        assert f'href="/{BOOK}/{host}/docs/deep/chapter.html"'.encode() in body
        status, _, body = await asyncio.to_thread(get, f"{base}/search?content={BOOK}&pattern=unclosed")
        assert f'href="/{BOOK}/{host}/plain.html"'.encode() in body
        status, _, body = await asyncio.to_thread(get, f"{base}/catalog/v2/entries")
        catalog = body.decode()
        for shown in ("<title>Mirror test site</title>", f"<name>{site.host.split(':')[0]}_eng_all</name>"):
            assert shown in catalog
        assert "<language>eng</language>" in catalog and "<name>site-archiver</name>" in catalog
        status, kind, icon = await asyncio.to_thread(get, f"{base}/catalog/v2/illustration/{BOOK}/?size=48")
        assert (status, kind.split(";")[0], icon[:4]) == (200, "image/png", b"\x89PNG")
    illustration = Image.open(io.BytesIO(icon))
    assert illustration.size == (48, 48)
    # the main page's <link rel=icon> (img/dot.png, 1x1, rgb(1, 1, 1)) scaled, before /favicon.ico
    assert illustration.convert("RGB").getpixel((24, 24)) == (1, 1, 1)


async def test_every_link_kiwix_serve_shows_resolves(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    """Our crawler, started at the book's main page, follows every link inside the book: all answer 200."""
    archive = await crawled(site, other_site, crawl_archive)
    zim = tmp_path / f"{BOOK}.zim"
    await export(archive, zim)
    with kiwix_serve(zim) as base:
        book = f"{base}/{BOOK}/"
        crawl = await crawl_archive(
            book, plugins=("links",), include=(f"^{re.escape(book)}",), output=str(tmp_path / "of-kiwix")
        )
    lines = (crawl.archive / "crawl-log.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    fetched = {r["url"]: r["status"] for r in records if r.get("outcome") == "fetched"}
    inside = {url: status for url, status in fetched.items() if url.startswith(book)}
    host = site.host.replace(":", "+")
    assert f"{book}{host}/docs/deep/chapter.html" in inside
    assert len(inside) >= 15
    broken = {url: status for url, status in inside.items() if status is None or status >= 400}
    assert not broken


async def test_main_page_option_and_bad_options(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawled(site, other_site, crawl_archive)
    zim = tmp_path / f"{BOOK}.zim"
    await export(archive, zim, main=site.url("/docs/page"))
    with kiwix_serve(zim) as base:
        status, _, body = await asyncio.to_thread(get, f"{base}/{BOOK}/")
    assert status == 200 and b"<title>A doc page</title>" in body
    with pytest.raises(UsageError, match="not a page of this archive"):
        await export(archive, tmp_path / "b.zim", main=site.url("/nowhere"))
    with pytest.raises(UsageError, match="ISO 639-3"):
        await export(archive, tmp_path / "b.zim", language="en")
    assert not (tmp_path / "b.zim").exists() and not (tmp_path / "b.zim.partial").exists()
    code, out = await archiver("export", archive, tmp_path / "c.zim", "--pages", "x")
    assert code == 2 and out.strip().count("\n") == 0 and "--pages applies to --format epub" in out


async def test_an_interrupted_export_leaves_no_file(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archiver_plugins.mirror.zim import ZimSink

    archive = await crawled(site, other_site, crawl_archive)
    written = ZimSink.put
    calls = 0

    def interrupted(self: ZimSink, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt  # as Ctrl-C would, in the middle of the pages
        written(self, *args, **kwargs)

    monkeypatch.setattr(ZimSink, "put", interrupted)
    with pytest.raises(KeyboardInterrupt):
        await export(archive, tmp_path / f"{BOOK}.zim")
    assert calls == 5 and not files_named(tmp_path, BOOK)


def test_the_backlog_waits_for_the_indexer_and_gives_up_when_it_stalls() -> None:
    import threading

    from archiver_plugins.mirror.zim import Backlog

    backlog = Backlog(limit=2, stall=5.0)
    for _ in range(4):
        backlog.hand()
    indexer = threading.Timer(0.05, lambda: [backlog.indexed_one() for _ in range(2)])
    indexer.start()
    backlog.wait()  # returns once the indexer has caught up to within the limit
    indexer.join()
    assert (backlog.handed - backlog.indexed, backlog.stalled) == (2, False)
    silent = Backlog(limit=0, stall=0.05)
    silent.hand()
    silent.wait()  # nobody indexes: it stops waiting, and never waits again
    assert silent.stalled
