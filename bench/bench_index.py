"""Benchmark of the full-text index: indexing pages/s, query latency, crawl overhead.

    python bench/bench_index.py --pages 10000            # index + queries
    python bench/bench_index.py --pages 2000 --crawl     # also: crawl time with/without index
    python bench/bench_index.py --pages 2000 --crawl-only --repeat 3

Indexing goes through the real path: pages are spooled as a crawl spools them, then the
writer drains the spool (HTML parsing + whoosh + commits), as after a crawl.
Queries run through `search()` with and without snippets.  `--crawl` serves the same
pages from a local aiohttp server (in its own process, so it does not share the crawl's
CPU) and crawls them with the links plugin alone and with links + index, `--repeat`
times, alternating.  The crawl's wall time is report.json's (first request to the last
page archived, taken before `crawl_finished`); the catch-up is what the indexed run
spends after it, waiting for the writer to index the pages it had not reached yet.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from archiver_plugins.index.search import search
from archiver_plugins.index.spool import Spool
from archiver_plugins.index.store import Capture, spool_path, whoosh_dir
from archiver_plugins.index.writer import Control, run
from index_pages import pages, vocabulary

from archiver.hookspecs import hookimpl


def index_pages(archive: Path, count: int, batch_size: int) -> dict[str, float]:
    spool = Spool(spool_path(archive))
    started = time.perf_counter()
    batch: list[Capture] = []
    total_bytes = 0
    for url, body in pages(count):
        total_bytes += len(body)
        batch.append(Capture(url, "20240501120000", 200, "text/html", "utf-8", body))
        if len(batch) == 64:
            spool.add(batch)
            batch = []
    if batch:
        spool.add(batch)
    spooled = time.perf_counter() - started
    spool.close()
    started = time.perf_counter()
    cpu = time.process_time()
    run(archive, batch_size, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    indexed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    size = sum(f.stat().st_size for f in whoosh_dir(archive).iterdir())
    return {
        "pages": count,
        "mean_html_kib": total_bytes / count / 1024,
        "spool_pages_per_s": count / spooled,
        "index_pages_per_s": count / indexed,
        "index_pages_per_cpu_s": count / cpu,
        "index_seconds": indexed,
        "index_mib": size / 2**20,
    }


def queries() -> list[str]:
    words = vocabulary()
    return [
        "queue",
        "event loop",
        '"event loop"',
        "async AND server NOT client",
        words[60],
        words[500],
        words[5000],
        f"{words[100]} {words[200]}",
        "title:queue",
        "site:docs1.example.test index",
        "asyn*",
        f"{words[300][:3]}*",
        "的一",
        words[15000] + "x",
    ]


def time_queries(archive: Path, snippets: bool, rounds: int) -> dict[str, float]:
    timings: list[float] = []
    for _ in range(rounds):
        for text in queries():
            started = time.perf_counter()
            search(archive, text, limit=10, with_snippets=snippets)
            timings.append(time.perf_counter() - started)
    timings.sort()
    return {
        "p50_ms": 1000 * statistics.median(timings),
        "p95_ms": 1000 * timings[int(len(timings) * 0.95) - 1],
        "max_ms": 1000 * timings[-1],
    }


def serve_pages(count: int, ready: Any) -> None:
    """The bench site: a home page, hubs of 100 links, `count` generated pages."""
    from aiohttp import web

    bodies = dict(pages(count))
    by_path = {url.split("example.test", 1)[1]: body for url, body in bodies.items()}
    paths = list(by_path)
    per_hub = 100
    hubs = [paths[i : i + per_hub] for i in range(0, len(paths), per_hub)]

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/":
            links = "".join(f'<a href="/hub/{i}">h</a>' for i in range(len(hubs)))
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        if request.path.startswith("/hub/"):
            hub = hubs[int(request.path.rsplit("/", 1)[1])]
            links = "".join(f'<a href="{p}">p</a>' for p in hub)
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        body = by_path.get(request.path)
        if body is None:
            return web.Response(status=404)
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    async def run() -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(run())


class CrawlClock:
    """Notes the time and the process's CPU time when the crawl's pages are all archived."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    @hookimpl(tryfirst=True)
    def crawl_finished(self, crawl: Any) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()


async def crawl_once(
    port: int, folder: Path, with_index: bool, share: float | None = None
) -> dict[str, float]:
    """One crawl: its own wall and CPU time (up to `crawl_finished`), then what follows."""
    import resource

    from archiver.config import load_config
    from archiver.crawler import run_crawl
    from archiver.manager import make_plugin_manager

    clock = CrawlClock()
    plugins = ["archiver_plugins.links"] + (["archiver_plugins.index"] if with_index else [])
    config = load_config(
        None,
        {
            "roots": (f"http://127.0.0.1:{port}/",),
            "output": str(folder),
            "delay": 0.0,
            "robots": False,
            "frontier": "memory",
            "per_host_concurrency": 10,
            "max_tasks": 10,
            "plugins": {"index": {} if share is None else {"crawl_share": share}},
        },
    )
    pm = make_plugin_manager(autoload=False, modules=plugins, plugins=[clock])
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, cpu = time.perf_counter(), time.process_time()
    await run_crawl(config, pm)
    ended = time.perf_counter()
    writer = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "crawl": clock.wall - started,
        "crawl_cpu": clock.cpu - cpu,
        "after": ended - clock.wall,
        "writer_cpu": max(writer.ru_utime + writer.ru_stime - children.ru_utime - children.ru_stime, 0.0),
    }


def compare_crawls(count: int, folder: Path, repeat: int, share: float | None = None) -> None:
    import multiprocessing

    ready: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve_pages, args=(count, ready), daemon=True)
    server.start()
    try:
        port = ready.get(timeout=120)
        runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for number in range(repeat):
            for with_index in (False, True):
                target = folder / f"crawl-{number}-{'index' if with_index else 'plain'}"
                figures = asyncio.run(crawl_once(port, target, with_index, share))
                runs[with_index].append(figures)
                label = "links + index" if with_index else "links only"
                print(
                    f"  run {number + 1} {label:14} crawl {figures['crawl']:6.1f} s"
                    f" (CPU {figures['crawl_cpu']:5.1f} s), after the crawl {figures['after']:6.1f} s,"
                    f" writer CPU {figures['writer_cpu']:6.1f} s",
                    flush=True,
                )
                shutil.rmtree(target, ignore_errors=True)
    finally:
        server.terminate()
        server.join()

    def median(with_index: bool, key: str) -> float:
        return statistics.median(r[key] for r in runs[with_index])

    plain, indexed = median(False, "crawl"), median(True, "crawl")
    plain_cpu, indexed_cpu = median(False, "crawl_cpu"), median(True, "crawl_cpu")
    catch_up = median(True, "after") - median(False, "after")
    print(f"crawl without index      {plain:10.1f} s  (median of {repeat}; CPU {plain_cpu:.1f} s)")
    print(
        f"crawl with index         {indexed:10.1f} s  (ratio {indexed / plain:.2f};"
        f" CPU {indexed_cpu:.1f} s, ratio {indexed_cpu / plain_cpu:.2f})"
    )
    print(
        f"index catch-up after it  {catch_up:10.1f} s  (writer CPU in all {median(True, 'writer_cpu'):.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crawl", action="store_true", help="also compare crawls with and without the index")
    parser.add_argument("--crawl-only", action="store_true", help="only compare crawls")
    parser.add_argument("--repeat", type=int, default=1, help="crawl pairs to run (medians are shown)")
    parser.add_argument("--crawl-share", type=float, help="[plugins.index] crawl_share for the crawls")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-index-"))
    try:
        if not args.crawl_only:
            archive = folder / "archive"
            figures = index_pages(archive, args.pages, args.batch_size)
            for key, value in figures.items():
                print(f"{key:24} {value:10.1f}", flush=True)
            for snippets in (False, True):
                label = "with snippets" if snippets else "no snippets"
                result = time_queries(archive, snippets, args.rounds)
                line = "  ".join(f"{k} {v:7.1f}" for k, v in result.items())
                print(f"query {label:14} {line}", flush=True)
            shutil.rmtree(archive, ignore_errors=True)
        if args.crawl or args.crawl_only:
            compare_crawls(args.pages, folder, args.repeat, args.crawl_share)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
