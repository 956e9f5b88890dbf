"""Benchmark of the index's tiered merge: CPU and memory of merging a tier's segments, per
page, beside the CPU of indexing those pages.

    python bench/bench_merge.py                                  # 32 segments of 270 pages
    python bench/bench_merge.py --segments 16 --per-segment 270 --deleted 0.01
    python bench/bench_merge.py --segments 64 --premerge 16      # 4 merged segments merged
    python bench/bench_merge.py --against HEAD~2     # the same merges by another revision

Bench pages (`index_pages.py`) are indexed into `--segments` segments of `--per-segment`
pages (a crawl's writer commits segments of a few hundred pages; `SEGMENTS_PER_TIER` of
them make a full tier), `--deleted` of the pages are then replaced (their old documents
deleted, the new ones in one more segment), with `--premerge G` the segments are merged
`G` at a time (so the timed merge is one of already-merged segments, as the top tier's),
and `tiers.merge_segments` merges every segment `--repeat` times, each time in a child
process that opens the index as the writer does (the merged segment is discarded).
Printed: indexing CPU per page, the merge's CPU per page (best and median of the repeats)
and their ratio, the merging process's peak RSS before and after the merge, and the load
average: compare the ratio inside one run.  With `--against REV`, each repeat also merges
the same segments with that revision's index plugin (`git archive`), alternating.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import INDEX_NAME, Capture, create_index, make_document
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


CHILD = """
import re, sys, time
from pathlib import Path
from archiver_plugins.index.store import writer_storage
from archiver_plugins.index.tiers import merge_segments
ix = writer_storage(Path(sys.argv[1])).open_index("MAIN")  # as the writer: files read, not mapped
writer = ix.writer()
def peak():  # VmHWM: ru_maxrss would start from the parent's at the fork
    return re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)
before = peak()
start = time.process_time()
merged = merge_segments(writer, ix._segments())
spent = time.process_time() - start
print(spent, merged.doc_count(), before, peak())
writer.cancel()
"""


def revision_plugins(revision: str, into: Path) -> Path:
    """A folder whose `archiver_plugins` is `revision`'s plugins (for PYTHONPATH)."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "archive", revision, "plugins"], cwd=root, check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "plugins").rename(into / "archiver_plugins")
    return into


def child_merge(folder: Path, pythonpath: Path | None) -> tuple[float, float, float]:
    """(CPU seconds, peak RSS in MB before it and at its end) of one merge of every
    segment in a child process."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run(
        [sys.executable, "-c", CHILD.replace('"MAIN"', repr(INDEX_NAME)), str(folder)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    spent, _, before, peak = done.stdout.split()
    return float(spent), int(before) / 1024, int(peak) / 1024


def premerge(ix: object, group: int) -> object:
    """The index with its segments merged `group` at a time (committed): the timed merge
    is then one of already-merged segments, as a tier's above the first."""
    writer = ix.writer()  # type: ignore[attr-defined]
    segments = ix._segments()  # type: ignore[attr-defined]
    merged = [merge_segments(writer, segments[at : at + group]) for at in range(0, len(segments), group)]
    writer.commit(mergetype=lambda writer, segments: merged)
    return FileIndex(ix.storage, ix.schema, ix.indexname)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--segments", type=int, default=32)
    parser.add_argument("--per-segment", type=int, default=270)
    parser.add_argument("--deleted", type=float, default=0.0, help="fraction of pages replaced")
    parser.add_argument(
        "--premerge", type=int, default=1, metavar="G", help="first merge the segments G at a time"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="also merge with this revision's index plugin")
    args = parser.parse_args()
    runs: list[tuple[float, float, float]] = []
    against: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        folder.mkdir()
        ix, indexing, pages = build(folder, args.segments, args.per_segment, args.deleted)
        if args.premerge > 1:
            ix = premerge(ix, args.premerge)
        segments = len(ix._segments())  # type: ignore[attr-defined]
        merged = ix.doc_count()  # type: ignore[attr-defined]
        other = revision_plugins(args.against, Path(tmp)) if args.against else None
        for _ in range(args.repeat):
            if other is not None:
                against.append(child_merge(folder, other))
            runs.append(child_merge(folder, None))
    per_index = indexing / pages * 1000
    times = [spent / merged * 1000 for spent, _, _ in runs]
    best, median = min(times), statistics.median(times)
    print(f"{args.segments} segments x {args.per_segment} pages, {args.deleted:.0%} replaced, {merged} live")
    if args.premerge > 1:
        print(f"  merged {args.premerge} at a time first: {segments} segments")
    print(f"  indexing CPU:  {per_index:.3f} ms/page")
    print(f"  merge CPU:     {best:.3f} ms/page best, {median:.3f} median of {args.repeat}")
    print(f"  merge / index: {best / per_index:.2f}x")
    base, peak = max(run[1] for run in runs), max(run[2] for run in runs)
    print(f"  merging process peak RSS: {peak:.1f} MB ({base:.1f} MB before the merge)")
    if against:
        theirs = [spent / merged * 1000 for spent, _, _ in against]
        mid = statistics.median(theirs)
        print(f"  {args.against} merge CPU: {min(theirs):.3f} ms/page best, {mid:.3f} median")
        print(f"  {args.against} / this: {min(theirs) / best:.2f}x")
        base, peak = max(run[1] for run in against), max(run[2] for run in against)
        print(f"  {args.against} peak RSS: {peak:.1f} MB ({base:.1f} MB before the merge)")
    print(f"  load average:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
