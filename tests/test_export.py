"""`archiver export`: a crawled local site exported as files, its links rewritten, incrementally."""

from __future__ import annotations

import asyncio
import json
import os
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from archiver_plugins.archive_reader.reader import open_archive
from archiver_plugins.mirror.export import ExportOptions, ExportResult, export_mirror
from archiver_plugins.mirror.sinks import MANIFEST_NAME
from mirror_site import PLAIN, build_site
from selectolax.lexbor import LexborHTMLParser

from archiver.cli import main
from archiver.testing import CrawlFn, Site

PLUGINS = ("links", "warc")


async def crawl_site(site: Site, other: Site, crawl_archive: CrawlFn) -> Path:
    build_site(site, other)
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    return crawl.archive


async def export(archive: Path, output: Path, **options: object) -> ExportResult:
    return await asyncio.to_thread(export_mirror, archive, output, ExportOptions(**options))  # type: ignore[arg-type]


def host_folder(site: Site) -> str:
    return site.host.replace(":", "+")


def parse(path: Path) -> LexborHTMLParser:
    return LexborHTMLParser(path.read_text("utf-8"))


def attr(tree: LexborHTMLParser, selector: str, name: str) -> str | None:
    node = tree.css_first(selector)
    assert node is not None, selector
    return node.attributes.get(name)


def local_links(html_file: Path) -> list[tuple[str, Path]]:
    """(href, resolved file) of every relative link of an exported page."""
    tree = parse(html_file)
    found = []
    for node in tree.css("[href], [src], [srcset]"):
        values = [node.attributes.get("href"), node.attributes.get("src")]
        srcset = node.attributes.get("srcset")
        if srcset:
            values += [part.split()[0] for part in srcset.split(",")]
        for value in values:
            if not value or value.startswith(("#", "mailto:")) or urlsplit(value).scheme:
                continue
            target = unquote(urlsplit(value).path)
            found.append((value, (html_file.parent / target).resolve()))
    return found


async def test_export_writes_the_tree_and_rewrites_links(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    out = tmp_path / "mirror"
    result = await export(archive, out)
    assert result.errors == [] and result.warnings == []
    host = out / host_folder(site)
    expected = [
        "index.html",
        "about.html",
        "old.html",
        "plain.html",
        "shop@item=1&color=red.html",
        "docs/index.html",
        "docs/page.html",
        "css/site.css",
        "css/fonts.css",
        "js/app.js",
        "fonts/test.ttf",
        "img/logo.png",
        "img/logo-2x.png",
        "img/wide.png",
        "img/bg.png",
        "img/paper.png",
        "img/dot.png",
    ]
    for name in expected:
        assert (host / name).is_file(), name
    assert (out / "index.html").is_file() and (out / "export-report.json").is_file()

    home = parse(host / "index.html")
    assert attr(home, "#to-about", "href") == "about.html"
    assert attr(home, "#to-docs", "href") == "docs/index.html"
    assert attr(home, "#to-old", "href") == "about.html"  # straight to the redirect's target
    assert attr(home, "#to-shop", "href") == "shop@item=1&color=red.html"
    assert attr(home, "#to-plain", "href") == "plain.html"
    assert attr(home, "#to-mail", "href") == "mailto:someone@example.invalid"
    assert attr(home, "#to-top", "href") == "#title"
    assert attr(home, "#to-missing", "href") == site.url("/missing")
    assert attr(home, "#to-missing", "data-archive-missing") == "HTTP 404 when crawled"
    assert "Not in the archive" in (attr(home, "#to-missing", "title") or "")
    assert attr(home, "#to-other", "href") == other_site.url("/elsewhere")
    assert attr(home, "#to-other", "data-archive-missing")
    assert attr(home, "#to-about", "data-archive-missing") is None
    stylesheet = home.css_first("link[rel=stylesheet]")
    assert stylesheet is not None
    assert stylesheet.attributes["href"] == "css/site.css"
    assert "integrity" not in stylesheet.attributes and "crossorigin" not in stylesheet.attributes
    assert attr(home, "#logo", "srcset") == "img/logo.png 1x, img/logo-2x.png 2x"
    assert attr(home, "source", "srcset") == "img/wide.png"
    assert "url('img/bg.png')" in (attr(home, "#bg", "style") or "").replace('"', "'")

    css = (host / "css/site.css").read_text()
    assert '@import url("fonts.css");' in css and "url(../img/paper.png)" in css
    assert 'url("../fonts/test.ttf")' in (host / "css/fonts.css").read_text()
    assert parse(host / "docs/page.html").css_first("a[href^='../about.html']") is not None
    assert attr(parse(host / "docs/page.html"), "a[href$='#team']", "href") == "../about.html#team"

    # Every relative link of every exported page points at an exported file.
    for page in out.rglob("*.html"):
        for href, target in local_links(page):
            assert target.is_file(), f"{page.relative_to(out)}: {href}"
            assert target.is_relative_to(out.resolve())

    # A page without links comes out byte for byte as it was archived.
    assert (host / "plain.html").read_bytes() == PLAIN

    # The redirect's own address forwards to the target.
    old = (host / "old.html").read_text()
    assert 'http-equiv="refresh" content="0; url=about.html"' in old

    landing = parse(out / "index.html")
    start = landing.css_first("a")
    assert start is not None and start.attributes["href"] == f"{host_folder(site)}/index.html"


async def test_report_lists_links_not_made_local(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    result = await export(archive, tmp_path / "mirror")
    report = json.loads((tmp_path / "mirror" / "export-report.json").read_text())
    missing = {row["url"]: row for row in report["missing"]}
    assert missing[site.url("/missing")]["reason"] == "HTTP 404 when crawled"
    assert missing[site.url("/missing")]["referrers"] == [site.url("/")]
    assert other_site.url("/elsewhere") in missing
    assert "mailto:someone@example.invalid" not in missing
    assert report["missing_urls"] == len(missing) == 2
    assert "2 URLs not in the archive" in result.summary()


async def test_export_again_writes_only_what_changed(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    out = tmp_path / "mirror"
    first = await export(archive, out)
    assert first.written == first.files > 15
    host = out / host_folder(site)
    inodes = {p: p.stat().st_ino for p in host.rglob("*") if p.is_file()}  # a rewrite makes a new one

    second = await export(archive, out)
    assert (second.written, second.removed) == (0, 0)
    assert second.unchanged == first.files
    assert second.missing is not None and second.missing.link_count == first.missing.link_count  # type: ignore[union-attr]

    # A later crawl captures a new version of one page: only that file changes.
    site.page("/about", links=["/", "../docs/page"], title="About us, revised")
    await crawl_archive(site.url("/about"), plugins=PLUGINS, max_depth=0)
    third = await export(archive, out)
    assert "About us, revised" in (host / "about.html").read_text()
    changed = {p.name for p, inode in inodes.items() if p.stat().st_ino != inode}
    assert changed == {"about.html"}
    assert third.written <= 3  # about.html, and the landing page and report that list the crawl

    # A file the export wrote that is no longer in the plan is removed; other files stay.
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    manifest["files"]["gone/old.html"] = dict(manifest["files"]["index.html"], url="http://x/")
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    (out / "gone").mkdir()
    (out / "gone/old.html").write_text("stale")
    (out / "mine.txt").write_text("not the export's")
    fourth = await export(archive, out)
    assert fourth.removed == 1
    assert not (out / "gone").exists()
    assert (out / "mine.txt").read_text() == "not the export's"

    # A file changed on disk is put back.
    (host / "plain.html").write_bytes(b"edited")
    fifth = await export(archive, out)
    assert fifth.written == 1 and (host / "plain.html").read_bytes() == PLAIN


async def test_zip_holds_the_same_tree(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    await export(archive, tmp_path / "mirror")
    result = await export(archive, tmp_path / "mirror.zip", format="zip")
    folder = {
        p.relative_to(tmp_path / "mirror").as_posix(): p.read_bytes()
        for p in (tmp_path / "mirror").rglob("*")
        if p.is_file() and p.name != MANIFEST_NAME
    }
    with zipfile.ZipFile(tmp_path / "mirror.zip") as packed:
        assert packed.testzip() is None
        names = packed.namelist()
        assert sorted(names) == sorted(folder)
        for name in names:
            if name != "export-report.json":
                assert packed.read(name) == folder[name], name
    assert result.files == len(folder)
    assert not (tmp_path / "mirror.zip.partial").exists()


async def test_export_at_a_timestamp_picks_the_nearest_capture(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    site.page("/", "<title>first</title>version one")
    await crawl_archive(site.url("/"), plugins=PLUGINS)
    await asyncio.sleep(1.1)  # WARC-Date has one-second resolution in the index
    site.page("/", "<title>second</title>version two")
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    latest = await export(crawl.archive, tmp_path / "latest")
    assert "version two" in (tmp_path / "latest" / host_folder(site) / "index.html").read_text()
    early = await export(crawl.archive, tmp_path / "early", timestamp="2000")
    assert "version one" in (tmp_path / "early" / host_folder(site) / "index.html").read_text()
    assert latest.errors == early.errors == []


def run_cli(*args: str) -> int:
    return main(["export", *map(str, args)])


async def test_cli_export_and_bad_input(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    code = await asyncio.to_thread(run_cli, archive, tmp_path / "out", "--json")
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["written"] == printed["files"] and printed["missing_urls"] == 2

    # An archive without WARC files.
    empty = tmp_path / "empty-archive"
    empty.mkdir()
    (empty / "crawl.toml").write_text("[crawl]\n")
    assert await asyncio.to_thread(run_cli, empty, tmp_path / "x") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("archiver: error:") and "no WARC files" in err and "\n" not in err

    # DIR is a file.
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert await asyncio.to_thread(run_cli, archive, a_file) == 2
    err = capsys.readouterr().err.strip()
    assert "is a file" in err and "\n" not in err

    # No archive at all; a bad --at.
    assert await asyncio.to_thread(run_cli, tmp_path / "nowhere", tmp_path / "y") == 2
    assert "no archive at" in capsys.readouterr().err
    assert await asyncio.to_thread(run_cli, archive, tmp_path / "z", "--at", "20241399") == 2
    assert "--at" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_no_permission_is_one_line(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert await asyncio.to_thread(run_cli, archive, locked / "out") == 1
        err = capsys.readouterr().err.strip()
        assert "cannot create" in err and "\n" not in err
    finally:
        locked.chmod(0o700)


async def test_truncated_warc_tail_still_exports_what_is_readable(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = await crawl_site(site, other_site, crawl_archive)
    (warc,) = sorted((archive / "warc").glob("*.warc.gz"))
    last = max(open_archive(archive).iter_captures(), key=lambda c: c.offset)
    with warc.open("r+b") as handle:
        handle.truncate(last.offset + last.length // 2)  # cut inside the last response
    code = await asyncio.to_thread(run_cli, archive, tmp_path / "out")
    captured = capsys.readouterr()
    assert code == 1  # an incomplete export says so in its exit code
    assert "damaged tail" in captured.err
    assert "Exported" in captured.out
    host = tmp_path / "out" / host_folder(site)
    assert (host / "index.html").is_file()
    assert len(list(host.rglob("*"))) > 10
    assert last.url in captured.err  # the record that was lost is named
