"""Cost of the WARC plugin: crawl rate with it on vs off, and the cost of one page's records.

    python -m bench.bench_warc [--pages 2000] [--rounds 2] [--level 6]

Crawls the generated bench site (bench.sitegen, served by nginx through bench.server)
in-process with the links plugin alone, then with links + warc, alternating, and prints
pages per second for each and their ratio.  Also times building and gzipping the
records of a typical 15 KB page on one thread, at the chosen gzip level and at 9
(warcio's default).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from archiver_plugins.warc.records import RecordMaker

from archiver.config import load_config
from archiver.manager import make_plugin_manager
from archiver.model import Link, Page
from archiver.runner import run_crawl
from bench import server, sitegen


async def crawl_once(url: str, out: Path, plugins: list[str], level: int) -> tuple[int, float]:
    config = load_config(
        None,
        {
            "roots": (url,),
            "output": str(out),
            "delay": 0.0,
            "robots": False,
            "frontier": "memory",
            "max_tasks": 16,
            "per_host_concurrency": 16,
            "plugins": {"warc": {"gzip_level": level}},
        },
    )
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{p}" for p in plugins])
    started = time.perf_counter()
    crawl = await run_crawl(config, pm)
    return crawl.stats["pages"], time.perf_counter() - started


def record_cost(level: int, count: int = 300) -> float:
    """Microseconds to build + gzip request/response/metadata for a 15 KB HTML page."""
    text = sitegen.render_page(sitegen.build(50), 3).encode()
    page = Page(
        url="http://127.0.0.1/p",
        status=200,
        body=text,
        headers=(("Content-Type", "text/html"), ("Content-Length", str(len(text)))),
        request_headers=(("Host", "127.0.0.1"),),
    )
    links = [Link(f"http://127.0.0.1/l{i}") for i in range(40)]
    maker = RecordMaker(True, level)
    started = time.perf_counter()
    for _ in range(count):
        maker.page(page, [f"{link.url} {link.kind}" for link in links], {}, dedup=False, metadata=True)
    return (time.perf_counter() - started) / count * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_warc", description=__doc__)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--level", type=int, default=6, help="gzip level for the warc runs")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-warc-"))
    try:
        site = work / "site"
        sitegen.generate(site, args.pages)
        rates: dict[str, list[float]] = {"links": [], "links+warc": []}
        with server.serving(site) as running:
            for round_ in range(args.rounds):
                for name, plugins in (("links", ["links"]), ("links+warc", ["links", "warc"])):
                    out = work / f"archive-{name}-{round_}"
                    pages, seconds = asyncio.run(crawl_once(running.url, out, plugins, args.level))
                    rates[name].append(pages / seconds)
                    size = (
                        sum(p.stat().st_size for p in (out / "warc").glob("*"))
                        if (out / "warc").exists()
                        else 0
                    )
                    print(f"{name:<11} round {round_}: {pages} pages in {seconds:.2f} s"
                          f" = {pages / seconds:.0f} pages/s  (warc folder {size / 1e6:.1f} MB)")  # fmt: skip
                    shutil.rmtree(out)
        off, on = max(rates["links"]), max(rates["links+warc"])
        print(f"best rate: warc off {off:.0f} pages/s, warc on {on:.0f} pages/s, ratio {on / off:.2f}")
        for level in sorted({args.level, 9}):
            print(f"records for one 15 KB page at gzip level {level}: {record_cost(level):.0f} us")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
