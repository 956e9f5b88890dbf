"""Benchmark of the full-text index: indexing pages/s, query latency, crawl overhead.

    python bench/bench_index.py --pages 10000            # index + queries
    python bench/bench_index.py --pages 2000 --crawl     # also: crawl time with/without index

Indexing goes through the real path: pages are spooled as a crawl spools them, then the
writer drains the spool (HTML parsing + whoosh + commits), as after a crawl.
Queries run through `search()` with and without snippets.  `--crawl` serves the same
pages from a local aiohttp server and crawls them twice (links only; links + index with
``wait = false``), then times the catch-up of what the writer had not indexed yet.
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

sys.path.insert(0, str(Path(__file__).parent))

from archiver_plugins.index.reindex import catch_up
from archiver_plugins.index.search import search
from archiver_plugins.index.spool import Spool
from archiver_plugins.index.store import Capture, spool_path, whoosh_dir
from archiver_plugins.index.writer import Control, run
from index_pages import pages, vocabulary


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


async def crawl_once(count: int, folder: Path, with_index: bool) -> tuple[float, float]:
    from aiohttp import web

    from archiver.config import load_config
    from archiver.crawler import run_crawl
    from archiver.manager import make_plugin_manager

    bodies = dict(pages(count))
    paths = [url.split("example.test", 1)[1] for url in bodies]
    by_path = {p: b for p, b in zip(paths, bodies.values(), strict=True)}
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

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
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
            "plugins": {"index": {"wait": False}},
        },
    )
    pm = make_plugin_manager(autoload=False, modules=plugins)
    started = time.perf_counter()
    await run_crawl(config, pm)
    crawl_seconds = time.perf_counter() - started
    await runner.cleanup()
    catch_up_seconds = 0.0
    if with_index:
        started = time.perf_counter()
        await asyncio.to_thread(catch_up, folder)
        catch_up_seconds = time.perf_counter() - started
    return crawl_seconds, catch_up_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crawl", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-index-"))
    try:
        archive = folder / "archive"
        figures = index_pages(archive, args.pages, args.batch_size)
        for key, value in figures.items():
            print(f"{key:24} {value:10.1f}", flush=True)
        for snippets in (False, True):
            label = "with snippets" if snippets else "no snippets"
            result = time_queries(archive, snippets, args.rounds)
            line = "  ".join(f"{k} {v:7.1f}" for k, v in result.items())
            print(f"query {label:14} {line}", flush=True)
        if args.crawl:
            plain, _ = asyncio.run(crawl_once(args.pages, folder / "plain", with_index=False))
            indexed, catch = asyncio.run(crawl_once(args.pages, folder / "indexed", with_index=True))
            print(f"crawl without index      {plain:10.1f} s")
            print(f"crawl with index         {indexed:10.1f} s  (ratio {indexed / plain:.2f})")
            print(f"index catch-up after it  {catch:10.1f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
