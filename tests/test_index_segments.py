"""Segments written when their postings fill the writer's memory: the same index, read by whoosh."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import create_index
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
    writer = SegmentBuilder(split, memory_mb=1)
    segments = 1
    for page in pages:
        if writer.full:
            assert not writer.pool.runs  # sorted in memory: nothing went to a run file
            writer.commit(merge=False)
            writer = SegmentBuilder(split, memory_mb=1)
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
    assert all(type(segment.codec()) is W3Codec for segment in split._segments())
    found = hits(split)
    assert found == hits(whole)
    assert found["w0"] and found["w399"] and found['"w1 w2"']
