"""Snippets are made from the pages' WARC records: the index keeps no copy of their text."""

from __future__ import annotations

import shutil
import zlib
from dataclasses import replace
from pathlib import Path

from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc
from archiver_plugins.index.search import close_all, search
from archiver_plugins.index.store import LEAD_CHARS, open_engine
from test_index_search import build
from whoosh.query import Every

FILLER = "Filler words about nothing in particular. " * 60  # past the text the index keeps
PAGES = {
    f"http://docs.example.test/{n}.html": (
        f"Page {n}",
        f"<p>An okapi{n} stands first. {FILLER}The zebra{n} grazes here.</p>",
    )
    for n in range(40)
}


def test_the_index_keeps_only_the_start_of_a_pages_text(tmp_path: Path) -> None:
    build(tmp_path, PAGES)
    index = open_engine(tmp_path)
    ranked = index.search(Every(), {}, None, 100, float("inf"))
    assert len(ranked.found) == len(PAGES)
    for found in ranked.found:
        lead, length = found.fields["excerpt"]
        assert len(zlib.decompress(lead)) <= LEAD_CHARS < length
    index.close()
    for n in (0, 17, 39):  # first, middle and last line of the sorted CDXJ file
        (hit,) = search(tmp_path, f"zebra{n}").hits
        assert f'The <b class="match term0">zebra{n}</b> grazes' in hit.snippet
    close_all()
    # a running crawl's WARC file has unsorted CDXJ lines beside it (`.cdxj.open`)
    folder = tmp_path / "warc"
    (warc,) = folder.glob("*.warc.gz")
    records = list(index_warc(warc))
    cdxj_path_for(warc).unlink()
    opened = warc.with_name(warc.name + ".open")
    warc.rename(opened)
    lines = [replace(record, filename=opened.name).to_cdxj() + "\n" for record in reversed(records)]
    cdxj_path_for(opened).with_suffix(".cdxj.open").write_text("".join(lines))
    (hit,) = search(tmp_path, "zebra5").hits
    assert '<b class="match term0">zebra5</b>' in hit.snippet
    close_all()


def test_a_page_whose_record_is_gone_shows_its_start_without_failing(tmp_path: Path) -> None:
    build(tmp_path, PAGES)
    shutil.rmtree(tmp_path / "warc")
    (hit,) = search(tmp_path, "zebra3").hits
    assert hit.url == "http://docs.example.test/3.html" and "<b" not in hit.snippet
    # a match in the start of the text the index keeps needs no record
    (hit,) = search(tmp_path, "okapi3").hits
    assert 'An <b class="match term0">okapi3</b> stands first' in hit.snippet
    close_all()
