"""Benchmark of the index's tiered merge: CPU of merging a tier's segments, per page, beside
the CPU of indexing those pages.

    python bench/bench_merge.py                                  # 32 segments of 270 pages
    python bench/bench_merge.py --segments 16 --per-segment 270 --deleted 0.01

Bench pages (`index_pages.py`) are indexed into `--segments` segments of `--per-segment`
pages (a crawl's writer commits segments of a few hundred pages; `SEGMENTS_PER_TIER` of
them make a full tier), `--deleted` of the pages are then replaced (their old documents
deleted, the new ones in one more segment), and `tiers.merge_segments` merges every
segment `--repeat` times (the merged segment is discarded each time).  Printed: indexing
CPU per page, the merge's CPU per page (best and median of the repeats) and their ratio,
and the load average: compare the ratio inside one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import Capture, create_index, make_document
from archiver_plugins.index.tiers import merge_segments
from index_pages import pages as bench_pages
from whoosh.index import FileIndex


def build(folder: Path, segments: int, per_segment: int, deleted: float) -> tuple[object, float, int]:
    """(the index, indexing CPU seconds, pages) with `segments` segments of bench pages."""
    ix = create_index(folder)
    captures = [
        Capture(url, "20240501120000", 200, "text/html", "utf-8", body)
        for url, body in bench_pages(segments * per_segment)
    ]
    docs = [make_document(capture) for capture in captures]
    spent = 0.0
    for first in range(0, len(docs), per_segment):
        start = time.process_time()
        writer = SegmentBuilder(ix)
        for doc in docs[first : first + per_segment]:
            writer.add_document(**doc)
        writer.commit(merge=False)
        spent += time.process_time() - start
    replaced = docs[:: max(1, round(1 / deleted))] if deleted else []
    if replaced:
        writer = SegmentBuilder(ix)
        for doc in replaced:
            writer.update_document(**{**doc, "title": "replaced"})
        writer.commit(merge=False)
    return FileIndex(ix.storage, ix.schema, ix.indexname), spent, len(docs)


def merge_cpu(ix: object) -> tuple[float, int]:
    """(CPU seconds of one merge of every segment, live documents merged)."""
    writer = ix.writer()  # type: ignore[attr-defined]
    try:
        segments = ix._segments()  # type: ignore[attr-defined]
        start = time.process_time()
        merged = merge_segments(writer, segments)
        spent = time.process_time() - start
        return spent, merged.doc_count()
    finally:
        writer.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--segments", type=int, default=32)
    parser.add_argument("--per-segment", type=int, default=270)
    parser.add_argument("--deleted", type=float, default=0.0, help="fraction of pages replaced")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        folder.mkdir()
        ix, indexing, pages = build(folder, args.segments, args.per_segment, args.deleted)
        runs = [merge_cpu(ix) for _ in range(args.repeat)]
    per_index = indexing / pages * 1000
    merged = runs[0][1]
    times = [spent / merged * 1000 for spent, _ in runs]
    best, median = min(times), statistics.median(times)
    print(f"{args.segments} segments x {args.per_segment} pages, {args.deleted:.0%} replaced, {merged} live")
    print(f"  indexing CPU:  {per_index:.3f} ms/page")
    print(f"  merge CPU:     {best:.3f} ms/page best, {median:.3f} median of {args.repeat}")
    print(f"  merge / index: {best / per_index:.2f}x")
    print(f"  load average:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
