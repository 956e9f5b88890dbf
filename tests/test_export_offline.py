"""ZIM and EPUB exports of archives the crawl did not write (other tools' WARC, ARC and WACZ
files), their command line: one-line errors, JSON, the progress bar on a terminal."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path

import pytest
from archiver_plugins.mirror.zim import EXTRA_HINT
from changing_site import crawl_twice
from cli_process import archiver
from offline_tools import epubcheck, files_named, zimcheck
from terminal import run_on_terminal, screen_lines

from archiver.cli import main
from archiver.testing import Site
from tests.foreign_archives import SAMPLES

IMPORTED = ("heritrix.warc.gz", "old.arc.gz", "browsertrix.wacz", "webrecorder-decoded.warc.gz")


async def imported_archive(tmp_path: Path) -> tuple[Path, list[str]]:
    """An archive made by `reindex --warc` from other tools' files; the words its pages hold."""
    files, words = [], []
    for sample in SAMPLES:
        if sample.name in IMPORTED:
            sample.write(tmp_path / sample.name)
            files.append(str(tmp_path / sample.name))
            words.append(sample.word)
    archive = tmp_path / "archive"
    assert await asyncio.to_thread(main, ["reindex", "--warc", *files, "-o", str(archive)]) == 0
    return archive, words


async def test_imported_archives_export_to_zim_and_epub(tmp_path: Path) -> None:
    archive, words = await imported_archive(tmp_path)
    zim, epub = tmp_path / "imported.zim", tmp_path / "imported.epub"
    code, out = await archiver("export", archive, zim, "--json")
    assert code == 0, out
    result = json.loads(out)  # nothing libzim prints is mixed into the JSON
    assert result["format"] == "zim" and result["bytes"] == zim.stat().st_size
    checked = await asyncio.to_thread(zimcheck, zim)
    assert checked.returncode == 0 and "[ERROR]" not in checked.stdout, checked.stdout

    from libzim.reader import Archive
    from libzim.search import Query, Searcher

    reader = Archive(str(zim))
    for word in words:
        found = Searcher(reader).search(Query().set_query(word))
        assert found.getEstimatedMatches() >= 1, word

    code, out = await archiver("export", archive, epub, "--title", "Imported")
    assert code == 0, out
    assert out.startswith("Wrote 5 pages as chapters into") and out.strip().count("\n") == 0
    with zipfile.ZipFile(epub) as book:
        text = " ".join(book.read(name).decode() for name in book.namelist() if name.endswith(".xhtml"))
    assert all(word in text for word in words)
    checked = await asyncio.to_thread(epubcheck, epub)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_a_missing_zim_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    archive, _ = await imported_archive(tmp_path)
    hidden = tmp_path / "no-libzim"
    (hidden / "libzim").mkdir(parents=True)
    (hidden / "libzim" / "__init__.py").write_text("raise ImportError('libzim is not installed')\n")
    code, out = await archiver("export", archive, tmp_path / "x.zim", env={"PYTHONPATH": str(hidden)})
    assert code == 2 and out.strip() == f"archiver: error: {EXTRA_HINT}"
    assert not files_named(tmp_path, "x.zim")


@pytest.mark.parametrize("suffix", ["zim", "epub"])
async def test_progress_shows_on_a_terminal_and_is_cleared(tmp_path: Path, suffix: str) -> None:
    archive, _ = await imported_archive(tmp_path)
    output = tmp_path / f"book.{suffix}"
    code, text = await asyncio.to_thread(
        run_on_terminal, ["export", str(archive), str(output)], tmp_path, 120
    )
    assert code == 0, text
    lines = screen_lines(text)
    assert any(line.startswith(f"Exporting {suffix}") for line in lines), lines
    assert lines[-1].startswith(("Packed ", "Wrote ")) and str(output) in "".join(lines[-2:])


async def test_a_recrawled_archive_exports_its_newest_captures(site: Site, tmp_path: Path) -> None:
    """Crawled twice with a page edited in between: the ZIM and the EPUB hold the second draft."""
    archive = tmp_path / "archive"
    await crawl_twice(site, archive)
    zim, epub = tmp_path / "twice.zim", tmp_path / "twice.epub"
    for output in (zim, epub):
        code, out = await archiver("export", archive, output, "-q")
        assert code == 0, out

    from libzim.reader import Archive

    reader = Archive(str(zim))
    edited = bytes(reader.get_entry_by_path(f"{site.host.replace(':', '+')}/edited.html").get_item().content)
    assert b"The second draft." in edited and b"first draft" not in edited
    with zipfile.ZipFile(epub) as book:
        text = " ".join(book.read(name).decode() for name in book.namelist() if name.endswith(".xhtml"))
    assert "The second draft." in text and "first draft" not in text and "A new page." in text
