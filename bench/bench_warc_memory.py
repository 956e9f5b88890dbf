"""Peak memory of the WARC writer as a crawl grows: does it stay flat from 10,000 pages up?

    python -m bench.bench_warc_memory [--pages 10000 100000] [--body 6000] [--dup 10] [--trace]

For each page count, a fresh Python process drives one `WarcWriter` through its hooks
(crawl_started, page_fetched for every page with 16 in flight, crawl_finished) with
hand-built pages: unique bodies of about `--body` bytes of varied words, and every
`--dup`-th page repeating an earlier body (a revisit).  No network and no crawl engine,
so what grows is the writer's own state.  Each child then runs a second, resumed pass
of 1,000 pages over the same archive, whose start-up shows what a resume costs.

Prints per run: peak RSS (ru_maxrss), its growth over the process after imports, CPU
and wall seconds, CPU microseconds per page, and the resume start-up time.  `--trace`
adds tracemalloc's largest allocation sites just before the crawl ends (slow).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

IN_FLIGHT = 16
WORDS = [
    *("archive", "crawl", "page", "link", "index", "record", "payload", "digest", "revisit"),
    *("server", "header", "body", "content", "encoding", "gzip", "frontier", "queue", "host"),
    *("delay", "robots", "sitemap", "mirror", "search", "response", "request", "metadata"),
    *("capture", "timestamp", "offset", "length", "filename", "status"),
]
HEADER = f"{'pages':>9} {'peak RSS':>9} {'growth':>8} {'CPU s':>7} {'wall s':>7} {'us/page':>8} {'resume':>7}"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _body(n: int, size: int, rng: random.Random) -> bytes:
    words = [rng.choice(WORDS) for _ in range(size // 7)]
    return (f"<html><body><h1>page {n}</h1><p>" + " ".join(words) + "</p></body></html>").encode()


def _page(n: int, body: bytes) -> Any:
    from archiver.model import Page

    url = f"http://127.0.0.1:8080/section-{n % 97}/page-{n}.html"
    return Page(
        url=url,
        status=200,
        reason="OK",
        headers=(
            ("Server", "nginx"),
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Length", str(len(body))),
        ),
        request_headers=(("Host", "127.0.0.1:8080"), ("User-Agent", "archiver-bench")),
        body=body,
        peer="127.0.0.1",
    )


async def _drive(archive: Path, pages: int, first: int, body_size: int, dup: int, trace: bool) -> float:
    """Feed `pages` pages through a fresh writer; return the crawl_started seconds."""
    from archiver_plugins.warc.settings import WarcSettings
    from archiver_plugins.warc.writer import WarcWriter

    from archiver.config import Config
    from archiver.model import Crawl, Link

    root = "http://127.0.0.1:8080/"
    crawl = Crawl(config=Config(roots=(root,)), archive=archive, roots=(root,))
    writer = WarcWriter(WarcSettings())
    started = time.perf_counter()
    await writer.crawl_started(crawl=crawl)
    start_seconds = time.perf_counter() - started
    rng = random.Random(first)
    bodies = [_body(i, body_size, rng) for i in range(64)]
    links = [Link(f"{root}section-{i}/page-{i}.html") for i in range(30)]
    queue: asyncio.Queue[int | None] = asyncio.Queue(maxsize=IN_FLIGHT * 2)

    async def worker() -> None:
        while (n := await queue.get()) is not None:
            if dup and n % dup == 0:
                body = bodies[n % len(bodies)]  # the same bytes again: a revisit
            else:
                body = bodies[n % len(bodies)] + f"<!-- {n} -->".encode()
            await writer.page_fetched(page=_page(n, body), links=links, crawl=crawl)

    workers = [asyncio.create_task(worker()) for _ in range(IN_FLIGHT)]
    for n in range(first, first + pages):
        await queue.put(n)
    for _ in workers:
        await queue.put(None)
    await asyncio.gather(*workers)
    if trace:
        import tracemalloc

        snapshot = tracemalloc.take_snapshot()
        for stat in snapshot.statistics("lineno")[:12]:
            print(f"  {stat.size / 2**20:7.1f} MB {stat.count:9d} blocks  {stat.traceback}", file=sys.stderr)
    await writer.crawl_finished(crawl=crawl)
    return start_seconds


def child(pages: int, body_size: int, dup: int, trace: bool) -> dict[str, float]:
    """One measured run, in this (fresh) process."""
    import archiver_plugins.warc.writer  # noqa: F401 - imports count in the baseline

    if trace:
        import tracemalloc

        tracemalloc.start()
    baseline = _rss_mb()
    work = Path(tempfile.mkdtemp(prefix="bench-warc-mem-"))
    try:
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        asyncio.run(_drive(work, pages, 0, body_size, dup, trace))
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        peak = _rss_mb()
        resume_start = asyncio.run(_drive(work, 1000, pages, body_size, dup, False))
        size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "pages": pages,
        "peak_rss_mb": round(peak, 1),
        "growth_mb": round(peak - baseline, 1),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "cpu_us_per_page": round(cpu / pages * 1e6),
        "resume_start_s": round(resume_start, 3),
        "archive_mb": round(size / 2**20, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_warc_memory", description=__doc__)
    parser.add_argument("--pages", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--body", type=int, default=6000, help="bytes of text per page body")
    parser.add_argument("--dup", type=int, default=10, help="every Nth page repeats a body (0: none)")
    parser.add_argument("--trace", action="store_true", help="tracemalloc's top allocation sites")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.body, args.dup, args.trace)))
        return 0
    print(
        f"{'pages':>9} {'peak RSS':>9} {'growth':>8} {'CPU s':>7} {'wall s':>7} {'us/page':>8} {'resume':>7}"
    )
    for pages in args.pages:
        command = [sys.executable, "-m", "bench.bench_warc_memory", "--child", str(pages)]
        command += ["--body", str(args.body), "--dup", str(args.dup)] + (["--trace"] if args.trace else [])
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{row['pages']:>9,} {row['peak_rss_mb']:>7.1f}MB {row['growth_mb']:>6.1f}MB"
            f" {row['cpu_s']:>7.2f} {row['wall_s']:>7.2f} {row['cpu_us_per_page']:>8}"
            f" {row['resume_start_s']:>6.3f}s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
