"""Benchmark of what a search pays per segment: the same pages searched as many segments,
then merged into fewer, then one.

    python bench/bench_segments.py                          # 64 segments of 270 pages
    python bench/bench_segments.py --segments 32 --per-segment 270 --steps 4,32 --rounds 5

Bench pages (`index_pages.py`) are indexed into `--segments` segments of `--per-segment`
pages (a crawl's writer commits segments of a few hundred pages); the bench's queries
(`bench_index.queries`) run through `search()` `--rounds` times with and without
snippets; then the segments are merged `G` at a time for each `G` of `--steps`
(`tiers.merge_segments`, as a tier merge does) and the queries run again.  Printed per
layout: the segment count, p50 and p95 of wall and CPU time a query, the first query of a
fresh process ("cold": the index opened, as by `archiver search`), and the load average.
The difference between two layouts divided by the difference of their segment counts is
what a search pays per segment (`tiers.py` weighs it against merging pages again).
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
from archiver_plugins.index.search import search
from archiver_plugins.index.store import whoosh_dir
from bench_index import queries
from bench_merge import build, premerge


def timings(archive: Path, snippets: bool, rounds: int) -> tuple[float, float, float, float]:
    """(p50 wall, p95 wall, p50 CPU, p95 CPU) in ms of the bench queries."""
    wall: list[float] = []
    cpu: list[float] = []
    texts = queries()
    for text in texts:  # warm: the first search of a layout opens and maps its files
        search(archive, text, limit=10, with_snippets=snippets)
    for _ in range(rounds):
        for text in texts:
            started, spent = time.perf_counter(), time.process_time()
            search(archive, text, limit=10, with_snippets=snippets)
            wall.append(1000 * (time.perf_counter() - started))
            cpu.append(1000 * (time.process_time() - spent))
    wall.sort()
    cpu.sort()
    at = max(0, int(len(wall) * 0.95) - 1)
    return statistics.median(wall), wall[at], statistics.median(cpu), cpu[at]


COLD = """
import sys, time
from archiver_plugins.index.search import search
started, spent = time.perf_counter(), time.process_time()
search(sys.argv[1], sys.argv[2], limit=10, with_snippets=False)
print(1000 * (time.perf_counter() - started), 1000 * (time.process_time() - spent))
"""


def cold(archive: Path, text: str, runs: int = 3) -> tuple[float, float]:
    """(wall, CPU) ms of the first search of a fresh process, as `archiver search` runs one:
    the index opened, each segment's files mapped and its term index read, then the query."""
    found = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", COLD, str(archive), text], check=True, capture_output=True, text=True
        )
        wall, cpu = done.stdout.split()
        found.append((float(wall), float(cpu)))
    return statistics.median(wall for wall, _ in found), statistics.median(cpu for _, cpu in found)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--segments", type=int, default=64)
    parser.add_argument("--per-segment", type=int, default=270)
    parser.add_argument("--steps", default="8,8", help="merge G at a time, for each G in turn")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp)
        folder = whoosh_dir(archive)
        folder.mkdir(parents=True)
        ix, _, pages = build(folder, args.segments, args.per_segment, 0.0)
        print(f"{pages} pages, {len(queries())} queries x {args.rounds} rounds; ms a query")
        columns = ("segments", "snippets", "p50 wall", "p95 wall", "p50 CPU", "p95 CPU")
        print(" ".join(f"{column:>9}" for column in columns))
        for group in [1, *(int(step) for step in args.steps.split(",") if step)]:
            if group > 1:
                ix = premerge(ix, group)
            count = len(ix._segments())  # type: ignore[attr-defined]
            for snippets in (False, True):
                p50, p95, cpu50, cpu95 = timings(archive, snippets, args.rounds)
                shown = "yes" if snippets else "no"
                print(f"{count:>9} {shown:>9} {p50:>9.1f} {p95:>9.1f} {cpu50:>9.1f} {cpu95:>9.1f}")
            wall, cpu = cold(archive, "queue")
            print(f"{count:>9} {'cold':>9} {wall:>9.1f} {'':>9} {cpu:>9.1f}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
