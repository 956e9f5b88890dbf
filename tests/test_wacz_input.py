"""A WACZ file is read wherever an archive is: `warc ls`, `warc check`, `export` (and `serve`,
`reindex --warc`); a pages.jsonl title that is only the page's URL does not hide its <title>."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from archiver.testing import CrawlFn, Site

pytestmark = pytest.mark.timeout(90)

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = [
    *("--plugin", "archiver_plugins.warc"),
    *("--plugin", "archiver_plugins.mirror"),
    *("--plugin", "archiver_plugins.index"),
]


def archiver(*args: str | Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", *PLUGINS, *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
async def wacz(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> Path:
    site.page("/", '<title>Home page</title><p>welcome</p><a href="/a">a</a>')
    site.page("/a", "<title>Page A</title><p>lighthouse keeper</p>")
    await crawl_archive(site.url("/"), plugins=("links", "warc"))
    target = tmp_path / "site.wacz"
    code, _, err = archiver("export", tmp_path / "archive", target, "--format", "wacz", "-q")
    assert code == 0, err
    return target


def listed(output: str) -> list[tuple[str, str]]:
    return sorted((json.loads(line)["url"], str(json.loads(line)["status"])) for line in output.splitlines())


async def test_warc_ls_lists_the_captures_of_a_wacz(wacz: Path, tmp_path: Path) -> None:
    code, from_archive, err = archiver("warc", "ls", tmp_path / "archive", "--json")
    assert code == 0, err
    code, from_wacz, err = archiver("warc", "ls", wacz, "--json")
    assert code == 0, err
    assert listed(from_wacz) == listed(from_archive)
    assert len(listed(from_wacz)) >= 2


async def test_warc_check_checks_the_warc_files_inside_a_wacz(wacz: Path) -> None:
    code, out, err = archiver("warc", "check", wacz)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-1] == "1 WARC file ok"
    assert lines[0].startswith(f"ok {wacz}/archive/") and "archiver-wacz-" not in out


async def test_warc_check_names_a_fault_inside_a_wacz_by_the_wacz(wacz: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.wacz"
    with zipfile.ZipFile(wacz) as source, zipfile.ZipFile(damaged, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.startswith("archive/"):
                data = data[: len(data) - 10]  # the last record cut short
            target.writestr(info, data)
    code, out, err = archiver("warc", "check", damaged)
    assert code == 1
    assert f"{damaged}/archive/" in out and "archiver-wacz-" not in out + err
    assert err.startswith("archiver: error: 1 fault in 1 of 1 WARC file")


async def test_export_of_a_wacz_writes_its_pages(wacz: Path, site: Site, tmp_path: Path) -> None:
    out = tmp_path / "mirror"
    code, _, err = archiver("export", wacz, out, "-q")
    assert code == 0, err
    exported = [p.read_text() for p in out.rglob("*.html")]
    assert any("lighthouse keeper" in page for page in exported)
    assert any("welcome" in page for page in exported)


async def test_a_title_that_is_the_url_leaves_the_pages_own_title(wacz: Path, tmp_path: Path) -> None:
    relisted = tmp_path / "url-titles.wacz"
    with zipfile.ZipFile(wacz) as source, zipfile.ZipFile(relisted, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "pages/pages.jsonl":
                lines = [json.loads(line) for line in data.decode().splitlines()]
                for line in lines:
                    if "url" in line:
                        line["title"] = line["url"]  # as some tools write a page without a title
                data = "".join(json.dumps(line) + "\n" for line in lines).encode()
            target.writestr(info, data)
    code, _, err = archiver("reindex", "--warc", relisted, "-o", tmp_path / "imported")
    assert code == 0, err
    code, out, err = archiver("search", tmp_path / "imported", "lighthouse", "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert [hit["title"] for hit in hits] == ["Page A"]
