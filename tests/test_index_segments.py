"""Segments written when their postings fill the writer's memory, merged by size tier: read by whoosh."""

from __future__ import annotations

import collections
import random
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.index import tiers
from archiver_plugins.index.blocks import Codec
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.spool import Spool
from archiver_plugins.index.store import Capture, create_index, open_index, spool_path
from archiver_plugins.index.tiers import merge_tiers, tier
from archiver_plugins.index.writer import Control, run
from whoosh.codec.whoosh3 import W3Codec
from whoosh.qparser import QueryParser

WORDS = [f"w{n}" for n in range(400)]


def documents(count: int) -> list[dict[str, Any]]:
    """Pages of Zipf-like words: a few frequent (long posting lists), most rare (one or two)."""
    chance = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [
        {
            "url": f"http://example.test/p{n}",
            "title": f"page {n}",
            "text": " ".join(chance.choices(WORDS, weights, k=300)),
        }
        for n in range(count)
    ]


def hits(ix: Any) -> dict[str, list[tuple[float, str]]]:
    found = {}
    with ix.searcher() as searcher:
        parser = QueryParser("text", ix.schema)
        for query in ("w0", "w5 w9", '"w1 w2"', "w399", "w250 OR w300", "title:page"):
            results = searcher.search(parser.parse(query), limit=None)
            found[query] = sorted((round(hit.score, 6), hit["url"]) for hit in results)
    return found


def test_a_full_segment_is_written_before_its_postings_spill(tmp_path: Path) -> None:
    pages = documents(150)
    for name in ("split", "whole"):
        (tmp_path / name).mkdir()
    split = create_index(tmp_path / "split")
    writer = SegmentBuilder(split, memory_mb=0.25)
    segments = 1
    for page in pages:
        if writer.full:
            assert not writer.pool.runs  # sorted in memory: nothing went to a run file
            writer.commit(merge=False)
            writer = SegmentBuilder(split, memory_mb=0.25)
            segments += 1
        writer.add_document(**page)
    assert not writer.pool.runs
    writer.commit(merge=False)
    assert segments >= 3 and len(split._segments()) == segments

    whole = create_index(tmp_path / "whole")
    with whole.writer() as plain:  # whoosh's own writer and codec, one segment
        for page in pages:
            plain.add_document(**page)

    assert split.doc_count() == whole.doc_count() == len(pages)
    assert all(type(segment.codec()) is Codec for segment in split._segments())
    assert all(type(segment.codec()) is W3Codec for segment in whole._segments())
    found = hits(split)
    assert found == hits(whole)
    assert found["w0"] and found["w399"] and found['"w1 w2"']


def test_segments_of_a_full_tier_are_merged_into_one_of_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiers, "SEGMENTS_PER_TIER", 4)  # tiers of 1, 4, then 16 pages and more
    monkeypatch.setattr(tiers, "TOP_SEGMENTS", 6)
    pages = documents(260)
    for name in ("tiered", "whole"):
        (tmp_path / name).mkdir()
    tiered = create_index(tmp_path / "tiered")
    again = [{**page, "title": "again"} for page in pages[:10]]  # replaces: earlier documents deleted
    sequence = [*pages[:20], *again, *pages[20:]]
    counts = []
    for start in range(0, len(sequence), 2):  # a commit every 2 pages: many small segments
        writer = SegmentBuilder(tiered, memory_mb=1)
        for page in sequence[start : start + 2]:
            writer.update_document(**page)
        writer.commit(mergetype=merge_tiers)
        counts.append(len(tiered._segments()))

    whole = create_index(tmp_path / "whole")
    with whole.writer() as plain:
        for page in [*again, *pages[10:]]:
            plain.add_document(**page)

    segments = tiered._segments()
    per_tier = collections.Counter(min(tier(segment), tiers.TOP_TIER) for segment in segments)
    assert len(counts) > 10 * tiers.SEGMENTS_PER_TIER  # whoosh alone would have kept a segment each
    # a commit merges the full tiers, then adds its own segment
    assert per_tier[0] <= tiers.SEGMENTS_PER_TIER and per_tier[1] <= tiers.SEGMENTS_PER_TIER
    assert per_tier[tiers.TOP_TIER] <= tiers.TOP_SEGMENTS
    assert max(counts) <= 2 * tiers.SEGMENTS_PER_TIER + tiers.TOP_SEGMENTS
    assert max(tier(segment) for segment in segments) >= 3  # the top tier's smallest were merged
    assert sum(segment.deleted_count() for segment in segments) == 0  # merged away
    assert tiered.doc_count() == whole.doc_count() == len(pages)
    found = hits(tiered)
    assert found["w0"] and found["w399"] and found['"w1 w2"']

    def urls(found: dict[str, list[tuple[float, str]]]) -> dict[str, list[str]]:
        return {query: sorted(url for _, url in ranked) for query, ranked in found.items()}

    # whoosh keeps a field's length in one byte: a merged document's length is that byte's
    # value, so scores match once both indexes are merged (whoosh's own merge here)
    assert urls(found) == urls(hits(whole))
    for ix in (tiered, whole):
        ix.writer().commit(optimize=True)
    assert hits(tiered) == hits(whole)


def test_a_drain_commits_by_batch_size_not_by_the_clock(tmp_path: Path) -> None:
    """Once the crawl is done, `batch_seconds` no longer cuts the catch-up into segments."""
    spool = Spool(spool_path(tmp_path))
    spool.add(
        [
            Capture(
                f"http://example.test/p{n}",
                "20240501120000",
                200,
                "text/plain",
                "utf-8",
                page["text"].encode(),
            )
            for n, page in enumerate(documents(100))
        ]
    )
    spool.close()
    run(tmp_path, batch_size=60, batch_seconds=0.0, max_chars=100_000, control=Control("drain"), lock_wait=0)
    ix = open_index(tmp_path)
    try:
        assert ix.doc_count() == 100
        assert len(ix._segments()) == 2  # 100 pages in batches of 60 (by the clock: one a read)
    finally:
        ix.close()
