"""`export` as wget users expect it over an archive crawled more than once: `--at TIME` shows the
site as it was then (no page first captured by a later crawl), a page an update found gone
leaves the mirror, and an output named like a tar file is refused rather than made a folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from changing_site import FIRST, SECOND, crawl, next_second, serve

from archiver.cli import main
from archiver.history import read_history
from archiver.testing import Site

pytestmark = pytest.mark.timeout(90)


async def export(*args: str | Path) -> int:
    return await asyncio.to_thread(main, ["export", *map(str, args), "-q"])


def pages(folder: Path) -> set[str]:
    """The exported pages by their name, without the host's folder (gone.html, fresh.html...)."""
    return {p.name for p in folder.rglob("*.html") if p.parent != folder}


async def test_export_over_two_crawls(site: Site, tmp_path: Path) -> None:
    archive, mirror = tmp_path / "a", tmp_path / "mirror"
    serve(site, FIRST)
    await crawl(site, archive)
    assert await export(archive, mirror) == 0
    first = pages(mirror)
    assert {"gone.html", "dropped.html"} <= first and "fresh.html" not in first
    await next_second()
    serve(site, SECOND)  # /gone answers 404 now, /fresh is new
    await crawl(site, archive, "--recrawl")

    assert await export(archive, mirror) == 0  # the mirror updated in place
    now = pages(mirror)
    assert "fresh.html" in now and "gone.html" not in now
    assert "dropped.html" in now  # no longer linked, but never said to be gone

    first_crawl = read_history(archive)[0].started.strftime("%Y%m%d%H%M%S")
    assert await export(archive, tmp_path / "then", "--at", first_crawl) == 0
    assert pages(tmp_path / "then") == first  # as it was: /gone still there, /fresh not yet


async def test_an_output_named_like_a_tar_file_is_refused(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve(site, FIRST)
    await crawl(site, tmp_path / "a")
    capsys.readouterr()
    assert await export(tmp_path / "a", tmp_path / "site.tar") == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"archiver: error: {tmp_path / 'site.tar'}: export writes a folder,")
        and err.count("\n") == 1
    )
    assert not (tmp_path / "site.tar").exists()
    assert await export(tmp_path / "a", tmp_path / "site.tar", "--format", "dir") == 0  # when it is meant
    assert (tmp_path / "site.tar").is_dir()
