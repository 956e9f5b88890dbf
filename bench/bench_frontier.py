"""What the SQLite frontier costs per page next to the in-memory one, and whether memory stays flat.

A synthetic crawl with no network: each page is one `get`, one `add` of 20 links (most
already seen, as on a real site) and one `done`, until the frontier is exhausted.  Each
run is a fresh process, so its peak RSS (ru_maxrss) is its own.

The links of a page (`--links site`, the default) are those of a site: the navigation (the
first 8 pages of its host, on every page), the next page, pages of the same host picked
at random, the home page of the next host and 2 pages of other hosts at random; a host
too small for its share gives the rest to other hosts, so every page has 20 links at every
size.  `--links uniform` sends every link to a page anywhere in the crawl, on any host:
no site looks like that, but it is the worst case for the seen set (no two look-ups near
each other on disk).

    python -m bench.bench_frontier                 # 10,000 and 100,000 URLs, sqlite and memory
    python -m bench.bench_frontier --sizes 1000000 --kinds sqlite
    python -m bench.bench_frontier --sizes 10000 1000000 --hosts 10000   # queues of 10,000 hosts
    python -m bench.bench_frontier --sizes 10000 1000000 --hosts 10000 --kinds sqlite --repeat 3

`--hosts N` spreads the URLs over N hosts (URL n is on host n mod N), so `get` goes through
the schedule of hosts: the cost per URL should not grow with the crawl (no politeness here,
so every host is always ready and they take turns).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from archiver.frontier import Frontier, Item, MemoryFrontier
from archiver.frontier_sqlite import SqliteFrontier
from archiver.layout import STATE_NAME

LINKS_PER_PAGE = 20
NAVIGATION = 8
HOSTS = 1
LINKS = "site"


def url(n: int) -> str:
    host = "www" if HOSTS == 1 else f"h{n % HOSTS}"
    return f"http://{host}.example.com/section/{n % 97}/page-{n}.html?ref=bench"


def targets(n: int, size: int) -> set[int]:
    """The pages page `n` links to, by number (page i of host h is number i * HOSTS + h)."""
    if LINKS == "uniform":
        return {(n + 1) % size, *((n * 31 + k * 7919) % size for k in range(LINKS_PER_PAGE - 1))}
    host, page = n % HOSTS, n // HOSTS
    pages = (size - host + HOSTS - 1) // HOSTS
    on_host = {i * HOSTS + host for i in range(min(NAVIGATION, pages))}
    on_host.add(((page + 1) % pages) * HOSTS + host)
    k = 0
    while len(on_host) < LINKS_PER_PAGE - 3 and len(on_host) < pages:
        on_host.add(((page * 31 + k * 7919) % pages) * HOSTS + host)
        k += 1
    links = on_host | {(host + 1) % HOSTS % size}
    k = 0
    while len(links) < min(LINKS_PER_PAGE, size):
        links.add((n * 131 + k * 104729 + 1) % size)
        k += 1
    return links


async def crawl(frontier: Frontier, size: int) -> tuple[int, float, float]:
    await frontier.open()
    await frontier.add([(url(0), Item(url(0)))])
    pages = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    while (item := await frontier.get()) is not None:
        n = int(item.url.rsplit("-", 1)[1].split(".", 1)[0])
        await frontier.add([(url(t), Item(url(t), item.depth + 1, 10, item.url)) for t in targets(n, size)])
        await frontier.done(item)
        pages += 1
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    await frontier.close()
    return pages, elapsed, cpu


def child(kind: str, size: int, hosts: int, links: str) -> None:
    global HOSTS, LINKS
    HOSTS, LINKS = hosts, links
    with tempfile.TemporaryDirectory() as folder:
        frontier: Frontier = (
            SqliteFrontier(Path(folder) / STATE_NAME) if kind == "sqlite" else MemoryFrontier()
        )
        pages, elapsed, cpu = asyncio.run(crawl(frontier, size))
        state = Path(folder) / STATE_NAME
        disk = state.stat().st_size if state.exists() else 0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "kind": kind,
                "urls": size,
                "hosts": hosts,
                "links": links,
                "pages": pages,
                "seconds": round(elapsed, 2),
                "us_per_page": round(elapsed / max(pages, 1) * 1e6, 1),
                "cpu_us_per_page": round(cpu / max(pages, 1) * 1e6, 1),
                "peak_rss_mb": round(peak_kb / 1024, 1),
                "state_mb": round(disk / 1e6, 1),
                "state_bytes_per_url": round(disk / max(size, 1)),
            }
        )
    )


def median_run(results: list[dict[str, float]]) -> dict[str, float]:
    """Each timing's median over the runs; the largest peak RSS."""
    return {
        "us_per_page": statistics.median(r["us_per_page"] for r in results),
        "cpu_us_per_page": statistics.median(r["cpu_us_per_page"] for r in results),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--kinds", nargs="+", default=["memory", "sqlite"], choices=["memory", "sqlite"])
    parser.add_argument("--hosts", type=int, default=1, help="hosts the URLs are spread over (default 1)")
    parser.add_argument(
        "--links",
        default="site",
        choices=["site", "uniform"],
        help="site: most links within the page's host, navigation on every page (default);"
        " uniform: every link to any page of the crawl",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each size and kind, in rounds; the ratios use each one's median (default 1)."
        " A run of 10,000 URLs lasts about a second, so one run of it moves the ratio by the"
        " noise of that second",
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    if args.child:
        child(args.child[0], int(args.child[1]), args.hosts, args.links)
        return
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for round_number in range(1, args.repeat + 1):
        for size, kind in itertools.product(args.sizes, args.kinds):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.bench_frontier",
                    "--child",
                    kind,
                    str(size),
                    "--hosts",
                    str(args.hosts),
                    "--links",
                    args.links,
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            result = json.loads(out)
            runs.setdefault((kind, size), []).append(result)
            print(
                (f"run {round_number}: " if args.repeat > 1 else "")
                + f"{kind:6} {size:>9,} URLs: {result['us_per_page']:7.1f} us/page"
                f" ({result['cpu_us_per_page']:.1f} us of CPU),"
                f" peak RSS {result['peak_rss_mb']:6.1f} MB"
                + (
                    f", state file {result['state_mb']:.1f} MB"
                    f" ({result['state_bytes_per_url']} bytes per URL)"
                    if kind == "sqlite"
                    else ""
                ),
                flush=True,
            )
    by = {key: median_run(results) for key, results in runs.items()}
    if args.repeat > 1:
        for (kind, size), result in by.items():
            print(
                f"median of {len(runs[(kind, size)])}: {kind:6} {size:>9,} URLs:"
                f" {result['us_per_page']:7.1f} us/page ({result['cpu_us_per_page']:.1f} us of CPU),"
                f" peak RSS {result['peak_rss_mb']:6.1f} MB (the largest)"
            )
    for size in args.sizes:
        if ("memory", size) in by and ("sqlite", size) in by:
            ratio = by[("sqlite", size)]["us_per_page"] / by[("memory", size)]["us_per_page"]
            print(f"sqlite/memory cost at {size:,} URLs: {ratio:.1f}x")
    small, big = min(args.sizes), max(args.sizes)
    for kind in args.kinds:
        if (kind, small) in by and (kind, big) in by and small != big:
            growth = by[(kind, big)]["peak_rss_mb"] / by[(kind, small)]["peak_rss_mb"]
            print(f"{kind} peak RSS {big:,} vs {small:,} URLs: {growth:.2f}x")
            cost = by[(kind, big)]["us_per_page"] / by[(kind, small)]["us_per_page"]
            cpu = by[(kind, big)]["cpu_us_per_page"] / by[(kind, small)]["cpu_us_per_page"]
            print(f"{kind} cost per URL {big:,} vs {small:,} URLs: {cost:.2f}x wall, {cpu:.2f}x CPU")
    load = " ".join(f"{n:.1f}" for n in os.getloadavg())
    print(f"hosts {args.hosts:,}, links {args.links}, load average {load}")


if __name__ == "__main__":
    main()
