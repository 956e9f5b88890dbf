"""Indexing with worker processes: `reindex`, catch-up and `merge` give the index one process gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from archiver_plugins.index import parallel as parallel_module
from archiver_plugins.index import reindex as reindex_module
from archiver_plugins.index.parallel import QUEUED_PER_WORKER, Workers
from archiver_plugins.index.reindex import catch_up, reindex
from archiver_plugins.index.search import search
from archiver_plugins.index.spool import Spool, pending_in
from archiver_plugins.index.store import Capture, engine_dir, open_or_create, spool_path
from test_index_crawl import write_foreign_warc
from test_index_resume import indexable_in_warcs, indexed

from archiver.manager import make_plugin_manager
from archiver.merge import merge_archives
from archiver.testing import CrawlFn, Site

PLUGINS = ("links", "warc", "index")
QUERIES = ("word7", "page", "here", "word1 OR word2", '"page 12"', "title:page", "p4")


def results(archive: Path) -> dict[str, list[list[tuple[str, str]]]]:
    """The ranking each query gives: its hits in groups of equal score, best first, each group's
    (url, title) sorted.  Equal scores may come in another order when the documents sit in other
    segments, and the scores themselves move a little where a replaced page's older document
    still counts in tantivy's statistics until its segment is merged; the ranking does not."""
    found = {}
    for query in QUERIES:
        groups: dict[float, list[tuple[str, str]]] = {}
        for hit in search(archive, query, limit=500, with_snippets=False).hits:
            groups.setdefault(round(hit.score, 4), []).append((hit.url, hit.title))
        found[query] = [sorted(group) for _, group in sorted(groups.items(), reverse=True)]
    return found


async def test_parallel_reindex_gives_the_index_one_process_gives(site: Site, crawl_archive: CrawlFn) -> None:
    site.loose_web(120, images=True)
    crawl = await crawl_archive(site.url("/p0"), plugins=PLUGINS)
    archive = crawl.archive
    pages = set(indexable_in_warcs(archive))
    assert len(pages) == 120

    one = reindex(archive, batch_size=16, processes=1)
    alone = results(archive)
    many = reindex(archive, batch_size=16, processes=3)
    assert many.indexed == one.indexed == len(pages)
    urls, count = indexed(archive)
    assert set(urls) == pages and count == len(pages) and max(urls.values()) == 1
    assert results(archive) == alone and alone["word7"]


def tiny_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """WARC files are cut every few records and commits come every few pages: every
    hand-over between the processes happens."""
    monkeypatch.setattr(parallel_module, "COMMIT_SECONDS", 0.0)
    monkeypatch.setattr(reindex_module, "CHUNK_BYTES", 3000)
    monkeypatch.setattr(reindex_module, "MIN_CHUNK_BYTES", 3000)


def hit_urls(archive: Path) -> dict[str, list[tuple[str, str]]]:
    """(url, title) of every hit of each query (the scores of a rebuild that replaced a
    document count the replaced one until its segment is merged)."""
    found = {}
    for query in (*QUERIES, "zebras", "okapis", "lemurs", "giraffes"):
        hits = search(archive, query, limit=500, with_snippets=False).hits
        found[query] = sorted((hit.url, hit.title) for hit in hits)
    return found


async def test_parallel_reindex_of_ranges_keeps_the_newest_capture_and_revisits(
    site: Site, crawl_archive: CrawlFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.loose_web(60, images=True)
    crawl = await crawl_archive(site.url("/p0"), plugins=PLUGINS)
    archive = crawl.archive
    write_foreign_warc(archive / "warc" / "zz-foreign.warc.gz")  # a revisit, a URL twice

    one = reindex(archive, processes=1)
    alone = hit_urls(archive)
    ones = indexed(archive)
    assert alone["okapis"] and not alone["lemurs"] and len(alone["zebras"]) == 2
    tiny_segments(monkeypatch)
    many = reindex(archive, processes=3)
    assert hit_urls(archive) == alone
    assert indexed(archive) == ones and max(ones[0].values()) == 1
    assert many.indexed == one.indexed == ones[1]
    assert many.records == one.records and many.files == one.files == 2


async def test_parallel_catch_up_replaces_a_url_spooled_twice(
    site: Site, crawl_archive: CrawlFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.loose_web(40, images=True)
    crawl = await crawl_archive(site.url("/p0"), plugins=PLUGINS)
    archive = crawl.archive
    spool = Spool(spool_path(archive))
    first, second = site.url("/p3"), site.url("/p5")
    spool.add(
        [
            Capture(first, "20300101000000", 200, "text/html", "utf-8", b"<title>older</title>"),
            *(
                Capture(site.url(f"/extra{n}"), "20300101000000", 200, "text/plain", None, b"extra words")
                for n in range(30)
            ),
            Capture(second, "20300101000000", 200, "text/html", "utf-8", b"<title>only</title>"),
            Capture(first, "20300101000001", 200, "text/html", "utf-8", b"<title>newer</title>"),
        ]
    )
    spool.close()
    tiny_segments(monkeypatch)
    assert catch_up(archive, batch_size=4, processes=2) == 33
    assert pending_in(spool_path(archive)) == 0
    urls, count = indexed(archive)
    assert count == len(urls) == 40 + 30 and max(urls.values()) == 1
    titles = {hit.url: hit.title for hit in search(archive, "title:newer OR title:older").hits}
    assert titles == {first: "newer"}


async def test_merge_indexes_the_workers_archives_as_a_rebuild_would(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    site.loose_web(90, images=True)
    version = {"n": 0}

    async def shared(request: web.Request) -> web.Response:
        version["n"] += 1
        return web.Response(text=f"<title>shared v{version['n']}</title>", content_type="text/html")

    site.handler("/shared", shared)
    sources = []
    for number, root in enumerate(("/p0", "/p30", "/p60")):
        source = tmp_path / f"worker{number}"
        await crawl_archive(
            [site.url(root), site.url("/shared")], plugins=PLUGINS, output=str(source), max_pages=40
        )
        sources.append(source)
    merged = tmp_path / "merged"
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.warc", "archiver_plugins.index"])
    merge_archives(sources, merged, plugin_manager=pm)

    urls, count = indexed(merged)
    assert set(urls) == set(indexable_in_warcs(merged)) and count == len(urls)
    assert max(urls.values()) == 1  # /shared: indexed by all three, kept once
    joined = results(merged)
    shared_hits = search(merged, "shared").hits
    assert [hit.title for hit in shared_hits] == ["shared v3"]  # the newest capture

    reindex(merged, processes=1)
    assert results(merged) == joined
    assert indexed(merged) == (urls, count)
    reindex(merged, processes=2)  # /shared in three files, read by different workers
    assert [hit.title for hit in search(merged, "shared").hits] == ["shared v3"]
    assert indexed(merged) == (urls, count)


async def test_catch_up_hands_chunks_out_as_workers_free_up(site: Site, crawl_archive: CrawlFn) -> None:
    """The queue holds a few chunks a worker, not the whole backlog (a million spooled
    pages once took the writer past 370 MB)."""
    site.loose_web(5)
    archive = (await crawl_archive(site.url("/p0"), plugins=PLUGINS)).archive
    spool = Spool(spool_path(archive))
    last = spool.add(
        Capture(site.url(f"/x{n}"), "20300101000000", 200, "text/plain", None, f"extra words {n}".encode())
        for n in range(400)
    )
    ids = spool.ids_between(0, last, 1000)
    spool.close()
    taken = 0
    taken_when_done: list[int] = []

    index, _ = open_or_create(engine_dir(archive))

    def received(_: int, documents: list[tuple[object, dict[str, object]]]) -> None:
        for _, document in documents:
            index.add(document)

    def chunks() -> Iterator[tuple[str, int, list[int]]]:
        nonlocal taken
        for number, row_id in enumerate(ids):
            taken += 1
            yield "rows", number, [row_id]

    workers = Workers(spool_path(archive), 2, 100_000)
    try:
        done = workers.run(chunks(), received, progress=lambda _: taken_when_done.append(taken))
        index.commit()
    finally:
        workers.close()
        index.close()
    assert done.indexed == len(ids) == 400
    assert taken_when_done[0] <= QUEUED_PER_WORKER * 2 + 1 < len(ids)
    assert search(archive, "extra").total == 400
