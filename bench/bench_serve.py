"""Latency of `archiver serve` under concurrent clients: a search page and a replay page.

    python -m bench.bench_serve [--pages 400] [--clients 50] [--requests 1000]

Generates the bench site (bench.sitegen), serves it from 127.0.0.1 with a small aiohttp
static server, crawls it with the links, warc and index plugins, then starts
``archiver serve ARCHIVE --port 0`` as its own process and drives it from this one with
`--clients` concurrent aiohttp clients on loopback: first `--requests` search pages
(one- and two-word queries drawn from the site's topic words, result pages 1-3), then
`--requests` replay pages (HTML captures at their exact time, banner and rewriting
included).  Prints p50/p95/p99/max latency and throughput for each, as a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web
from archiver_plugins.archive_reader.reader import open_archive

from archiver.config import load_config
from archiver.manager import make_plugin_manager
from archiver.runner import run_crawl
from bench import sitegen


async def crawl_site(root: Path, archive: Path) -> int:
    """Serve `root` on 127.0.0.1 and crawl it into `archive`; the number of pages."""
    app = web.Application()
    app.router.add_get("/", lambda request: web.FileResponse(root / "index.html"))
    app.router.add_static("/", root, show_index=False)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        config = load_config(
            None,
            {
                "roots": (f"http://127.0.0.1:{port}/",),
                "output": str(archive),
                "delay": 0.0,
                "robots": False,
                "frontier": "memory",
                "max_tasks": 16,
                "per_host_concurrency": 16,
            },
        )
        pm = make_plugin_manager(
            autoload=False, modules=[f"archiver_plugins.{p}" for p in ("links", "warc", "index")]
        )
        crawl = await run_crawl(config, pm)
        return int(crawl.stats["pages"])
    finally:
        await runner.cleanup()


async def start_server(archive: Path) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "serve",
        str(archive),
        "--port",
        "0",
        "--quiet",
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
    match = re.search(r"(http://\S+/)", line)
    if match is None:
        process.terminate()
        raise SystemExit(f"archiver serve did not print its URL: {line!r}")
    return process, match.group(1).rstrip("/")


async def drive(base: str, paths: list[str], clients: int) -> tuple[list[float], float, dict[int, int]]:
    """Send every path once, `clients` at a time; per-request seconds, wall time, statuses."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    connector = TCPConnector(limit=clients)
    async with ClientSession(connector=connector, timeout=ClientTimeout(total=120)) as session:

        async def client() -> None:
            while not queue.empty():
                path = queue.get_nowait()
                started = time.perf_counter()
                async with session.get(base + path, allow_redirects=False) as response:
                    await response.read()
                latencies.append(time.perf_counter() - started)
                statuses[response.status] = statuses.get(response.status, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - started
    return latencies, wall, statuses


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(name: str, latencies: list[float], wall: float, statuses: dict[int, int]) -> dict[str, object]:
    return {
        "page": name,
        "requests": len(latencies),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p95_ms": round(percentile(latencies, 95) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
        "mean_ms": round(statistics.mean(latencies) * 1000, 1),
        "per_second": round(len(latencies) / wall, 1),
        "statuses": statuses,
    }


async def main_async(args: argparse.Namespace) -> list[dict[str, object]]:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as temp:
        work = Path(temp)
        sitegen.generate(work / "gen", pages=args.pages)
        started = time.perf_counter()
        pages = await crawl_site(work / "gen" / "site", work / "archive")
        print(f"crawled {pages} pages in {time.perf_counter() - started:.1f} s", file=sys.stderr)

        captures = [
            c
            for c in open_archive(work / "archive").iter_captures()
            if c.mime == "text/html" and c.status == 200
        ]
        words = [w for w in sitegen.TOPIC_WORDS if w.isascii()]
        searches = []
        for _ in range(args.requests):
            query = " ".join(rng.sample(words, rng.choice((1, 1, 2))))
            searches.append("/search?" + urlencode({"q": query, "page": rng.choice((1, 1, 1, 2, 3))}))
        replays = [
            f"/replay/{c.timestamp}/{quote(c.url, safe=':/?&=%')}"
            for c in (rng.choice(captures) for _ in range(args.requests))
        ]

        process, base = await start_server(work / "archive")
        try:
            await drive(base, searches[:50] + replays[:50], 10)  # warm up: open the index, fill caches
            results = []
            for name, paths in (("search", searches), ("replay", replays)):
                latencies, wall, statuses = await drive(base, paths, args.clients)
                results.append(summary(name, latencies, wall, statuses))
        finally:
            process.terminate()
            await process.wait()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_serve", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=400, help="pages of the generated site (400)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (50)")
    parser.add_argument("--requests", type=int, default=1000, help="requests per page kind (1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.clients} concurrent clients on loopback, {args.pages}-page site\n")
    print("| page | requests | p50 ms | p95 ms | p99 ms | max ms | req/s | statuses |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        print(
            f"| {r['page']} | {r['requests']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} "
            f"| {r['max_ms']} | {r['per_second']} | {r['statuses']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
