"""Index plugin: the engines behind `engine.Engine`, their files on disk, and upgrades.

tantivy keeps the files of merged segments until told to remove them; the index must not
grow across repeated updates of the same pages.  An archive indexed by an earlier version
(``index/whoosh``, a codec this version cannot read) is said in one line, and rebuilt.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from archiver_plugins.index.reindex import reindex
from archiver_plugins.index.schema import plain_analyzer, text_analyzer
from archiver_plugins.index.search import close_all, search
from archiver_plugins.index.status import status_lines
from archiver_plugins.index.store import (
    Capture,
    OutdatedIndexError,
    engine_dir,
    index_root,
    make_document,
    open_engine,
    open_or_create,
)
from archiver_plugins.index.writer import Batcher
from test_index_search import PAGES, build
from warc_pages import write_warc

from archiver.cli import main

LEGACY = Path(__file__).parent / "data" / "index-whoosh3"
"""An index written by an earlier version (whoosh segments in the codec it had)."""


def captures(pages: dict[str, tuple[str, str]], time: str = "20240501120003") -> list[Capture]:
    return [
        Capture(
            url,
            time,
            200,
            "text/html",
            "utf-8",
            f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode(),
        )
        for url, (title, body) in pages.items()
    ]


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def listed_files(folder: Path) -> set[str]:
    """The segment files the last commit lists, and the files every tantivy index has."""
    meta = json.loads((folder / "meta.json").read_text())
    ids = {segment["segment_id"].replace("-", "") for segment in meta["segments"]}
    return {path.name for path in folder.iterdir() if path.name.split(".")[0] in ids}


def dead_files(folder: Path) -> list[str]:
    keep = {"meta.json", ".managed.json", ".tantivy-meta.lock", ".tantivy-writer.lock"}
    return sorted(
        p.name for p in folder.iterdir() if p.name not in keep and p.name not in listed_files(folder)
    )


def test_analysis_gives_the_terms_indexing_gives_at_their_positions() -> None:
    for analyzer in (text_analyzer(), plain_analyzer()):
        for text in ("The queues of asyncio.run", "全文搜索 and 中文", "utf-8 non-blocking I/O", ""):
            by_position = sorted(
                (pos, term) for term, spots in analyzer.positions(text).items() for pos in spots
            )
            assert analyzer.terms(text).split() == [term for _, term in by_position]


def test_the_index_does_not_grow_across_repeated_updates(tmp_path: Path) -> None:
    pages = {
        f"http://grow.test/{n}": (f"Page {n}", f"<p>okapi number {n} {'words ' * 50}</p>") for n in range(60)
    }
    index, _ = open_or_create(engine_dir(tmp_path))
    batcher = Batcher(index, batch_size=20, batch_seconds=60, max_chars=100_000)
    for capture in captures(pages):
        batcher.add(capture)
        if batcher.due():
            batcher.commit()
    batcher.commit()
    index.close()
    folder = engine_dir(tmp_path)
    first = folder_bytes(folder)
    for round_number in range(10):  # as 10 `--update` runs refetching every page
        index, _ = open_or_create(folder)
        batcher = Batcher(index, batch_size=20, batch_seconds=60, max_chars=100_000)
        for capture in captures(pages, time=f"2024050112{round_number:02d}00"):
            batcher.add(capture)
            if batcher.due():
                batcher.commit()
        batcher.commit()
        index.close()
        assert not dead_files(folder), dead_files(folder)
    assert folder_bytes(folder) < 2 * first
    assert search(tmp_path, "okapi").total == 60
    index = open_engine(tmp_path)
    assert index.pages() == 60 and set(index.indexed_times().values()) == {"20240501120900"}
    index.close()
    close_all()


def test_a_rebuild_leaves_no_dead_files_and_replaces_the_folder(tmp_path: Path) -> None:
    build(tmp_path, PAGES)
    for _ in range(3):
        reindex(tmp_path, batch_size=2)
    folder = engine_dir(tmp_path)
    assert not dead_files(folder)
    assert sorted(p.name for p in index_root(tmp_path).iterdir() if p.is_dir()) == ["tantivy"]
    assert search(tmp_path, "queue").total >= 2
    close_all()


def test_an_index_of_an_earlier_version_says_to_reindex_then_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "archive"
    write_warc(archive, captures(PAGES))
    shutil.copytree(LEGACY, index_root(archive) / "whoosh")
    with pytest.raises(OutdatedIndexError, match=f"earlier version.*archiver reindex {archive}"):
        search(archive, "queue")
    assert ("search index", f"made by an earlier version: rebuild it with `archiver reindex {archive}`") in (
        status_lines(archive) or []
    )
    assert main(["search", str(archive), "queue"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "archiver reindex" in err and "Traceback" not in err
    assert main(["reindex", str(archive)]) == 0
    assert not (index_root(archive) / "whoosh").exists()
    assert search(archive, "queue").total >= 2
    close_all()


def test_a_crawl_writer_sets_an_earlier_versions_index_aside(tmp_path: Path) -> None:
    shutil.copytree(LEGACY, index_root(tmp_path) / "whoosh")
    index, note = open_or_create(engine_dir(tmp_path))
    assert note is not None and "earlier version" in note
    index.add(make_document(captures(PAGES)[0]))
    index.commit()
    index.close()
    results = search(tmp_path, "asyncio")
    assert results.total == 1 and any("archiver reindex" in line for line in results.notes)
    close_all()


@pytest.fixture
def whoosh_archive(tmp_path: Path) -> Path:
    """PAGES indexed by the fallback engine (stock whoosh)."""
    archive = tmp_path / "archive"
    index, _ = open_or_create(engine_dir(archive, "whoosh"))
    assert index.name == "whoosh"
    batcher = Batcher(index, batch_size=100, batch_seconds=60, max_chars=100_000)
    for capture in captures(PAGES):
        batcher.add(capture)
    batcher.commit()
    index.close()
    write_warc(archive, captures(PAGES))
    return archive


@pytest.mark.parametrize(
    "query",
    [
        "queue",
        "asyncio queue",
        '"event loop"',
        "queu*",
        "title:loop",
        "queue -asyncio",
        "搜索",
        "coroutines OR books",
    ],
)
def test_the_fallback_engine_finds_what_tantivy_finds(
    whoosh_archive: Path, tmp_path: Path, query: str
) -> None:
    tantivy_archive = tmp_path / "tantivy"
    build(tantivy_archive, PAGES)
    by_whoosh = search(whoosh_archive, query)
    by_tantivy = search(tantivy_archive, query)
    assert by_whoosh.total == by_tantivy.total > 0
    assert {hit.url for hit in by_whoosh.hits} == {hit.url for hit in by_tantivy.hits}
    assert [hit.snippet for hit in by_whoosh.hits if hit.url.endswith("zh.html")] == [
        hit.snippet for hit in by_tantivy.hits if hit.url.endswith("zh.html")
    ]
    close_all()


def test_the_fallback_engine_filters_suggests_and_is_rebuilt_in_place(whoosh_archive: Path) -> None:
    assert search(whoosh_archive, "queue", site="blog.other.test").total == 1
    assert search(whoosh_archive, "queue", site="nowhere.test").total == 0
    assert search(whoosh_archive, "asyncoi queue").suggestion == "asyncio queue"
    close_all()
    reindex(whoosh_archive)  # keeps the engine of the archive's index
    assert engine_dir(whoosh_archive).name == "whoosh-stock"
    assert search(whoosh_archive, "queue").total >= 2
    close_all()


@pytest.mark.parametrize("engine", ["tantivy", "whoosh"])
def test_one_document_per_url_within_a_batch_and_across_commits(tmp_path: Path, engine: str) -> None:
    index, _ = open_or_create(engine_dir(tmp_path, engine))
    batcher = Batcher(index, batch_size=100, batch_seconds=60, max_chars=100_000)
    for stamp in ("20240101000000", "20240102000000", "20240103000000"):
        batcher.add(captures({"http://one.test/": ("One", f"<p>okapi {stamp}</p>")}, time=stamp)[0])
    batcher.commit()
    batcher.add(captures({"http://one.test/": ("One", "<p>okapi again</p>")}, time="20240104000000")[0])
    batcher.commit()
    index.close()
    index = open_engine(tmp_path)
    assert index.pages() == 1 and index.indexed_times() == {"http://one.test/": "20240104000000"}
    index.close()
    assert [hit.url for hit in search(tmp_path, "okapi").hits] == ["http://one.test/"]
    close_all()
