"""Cost of the WARC plugin: crawl rate with it on vs off, the cost of one page's records, and
the CPU of each side of the writer process's pipe.

    python -m bench.bench_warc [--pages 2000] [--rounds 2] [--level 6]
    python -m bench.bench_warc --writer [--pages 1000] [--rounds 3] [--against REV]

Crawls the generated bench site (bench.sitegen, served by nginx through bench.server)
in-process with the links plugin alone, then with links + warc, alternating, and prints
pages per second for each and their ratio.  Also times building and gzipping the
records of a typical 15 KB page on one thread, at the chosen gzip level and at 9
(warcio's default).

``--writer`` leaves HTTP and link extraction out: bench pages (with 40 links each) are
handed to `WarcWriter.page_fetched`, 100 at once as the crawl does, in a fresh child, and
the child reports its own CPU (the crawl's side: pickling, the pipe, the answers) and the
writer process's (building, compressing, writing), per page.  With ``--against REV`` the
code of git revision REV runs too, interleaved round by round, so both see the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
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
from bench.measure import child_figures
from bench.measure import medians as median_of


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


def bench_pages(count: int) -> list[tuple[Page, list[Link]]]:
    """`count` pages of the bench site as the fetcher gives them, each with 40 links."""
    site = sitegen.build(count)
    pages = []
    for i in range(count):
        body = sitegen.render_page(site, i).encode()
        page = Page(
            url=f"http://127.0.0.1:8080/p/{i}.html",
            status=200,
            reason="OK",
            body=body,
            content=body,
            headers=(
                ("Server", "nginx/1.22.1"),
                ("Date", "Mon, 23 Nov 2026 14:00:00 GMT"),
                ("Content-Type", "text/html"),
                ("Content-Length", str(len(body))),
                ("Last-Modified", "Mon, 23 Nov 2026 13:00:00 GMT"),
                ("Connection", "keep-alive"),
                ("ETag", '"5f3a-1c2b"'),
                ("Accept-Ranges", "bytes"),
            ),
            request_headers=(("Host", "127.0.0.1:8080"), ("User-Agent", "archiver"), ("Accept", "*/*")),
            peer="127.0.0.1",
            depth=3,
            referrer="http://127.0.0.1:8080/",
            elapsed=0.01,
        )
        pages.append((page, [Link(f"http://127.0.0.1:8080/p/{j}.html") for j in range(i, i + 40)]))
    return pages


async def feed_writer(count: int, level: int) -> dict[str, float]:
    """Hand `count` bench pages to a `WarcWriter`, 100 at once; CPU per page of each side."""
    from archiver_plugins.warc import WarcWriter
    from archiver_plugins.warc.settings import WarcSettings

    from archiver.testing import make_crawl

    pages = bench_pages(count)
    work = Path(tempfile.mkdtemp(prefix="bench-warc-writer-"))
    try:
        crawl = make_crawl("http://127.0.0.1:8080/", archive=work)
        writer = WarcWriter(WarcSettings(gzip_level=level))
        await writer.crawl_started(crawl=crawl)
        slots = asyncio.Semaphore(100)

        async def one(page: Page, links: list[Link]) -> None:
            async with slots:
                await writer.page_fetched(page=page, links=links, crawl=crawl)

        await one(*pages[0])  # the writer process has started and imported what it needs
        worker = writer._process.process.pid  # type: ignore[union-attr]
        before, writer_before = resource.getrusage(resource.RUSAGE_SELF), _cpu_of(worker)
        started = time.perf_counter()
        await asyncio.gather(*(one(page, links) for page, links in pages[1:]))
        after, writer_after = resource.getrusage(resource.RUSAGE_SELF), _cpu_of(worker)
        wall = time.perf_counter() - started
        peak = _peak_rss_mb(worker)
        await writer.crawl_finished(crawl=crawl)
        size = sum(p.stat().st_size for p in (work / "warc").glob("*.warc.gz"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    us = 1e6 / (count - 1)
    return {
        "crawl_user_us": (after.ru_utime - before.ru_utime) * us,
        "crawl_sys_us": (after.ru_stime - before.ru_stime) * us,
        "writer_user_us": (writer_after[0] - writer_before[0]) * us,
        "writer_sys_us": (writer_after[1] - writer_before[1]) * us,
        "wall_us": wall * us,
        "warc_bytes_per_page": size / count,
        "writer_peak_rss_mb": peak,
    }


def _cpu_of(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def writer_ab(pages: int, rounds: int, level: int, against: str | None) -> None:
    """Each round runs `feed_writer` in a fresh child, REV's code first when given."""
    from .bench_crawl import source_of

    work = Path(tempfile.mkdtemp(prefix="bench-warc-ab-"))
    try:
        variants: list[tuple[str, str]] = []
        if against:
            variants.append((f"@{against}", str(source_of(against, work / "against"))))
        variants.append(("current", ""))
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
        loads = []
        for _ in range(rounds):
            for name, path in variants:
                root = str(Path(__file__).resolve().parent.parent)
                loads.append(os.getloadavg()[0])
                args = ["--writer-child", str(pages), "--level", str(level)]
                results[name].append(child_figures("bench.bench_warc", args, path, root))
        print(f"{pages} bench pages handed to the WARC writer, {rounds} rounds, gzip level {level}, "
              f"load average {min(loads):.2f}-{max(loads):.2f}; medians, us per page:")  # fmt: skip
        print("| code | crawl side user+sys | writer process user+sys | wall | WARC bytes/page | writer MB |")
        print("|---|---:|---:|---:|---:|---:|")
        medians = {name: median_of(runs) for name, runs in results.items()}
        for name, m in medians.items():
            print(
                f"| {name} | {m['crawl_user_us']:.0f}+{m['crawl_sys_us']:.0f} "
                f"| {m['writer_user_us']:.0f}+{m['writer_sys_us']:.0f} | {m['wall_us']:.0f} "
                f"| {m['warc_bytes_per_page']:.0f} | {m['writer_peak_rss_mb']:.0f} |"
            )
        if against:
            old, new = medians[f"@{against}"], medians["current"]
            for side in ("crawl", "writer"):
                before = old[f"{side}_user_us"] + old[f"{side}_sys_us"]
                after = new[f"{side}_user_us"] + new[f"{side}_sys_us"]
                print(f"{side} side CPU: {after / before:.2f}x of {against}'s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_warc", description=__doc__)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--level", type=int, default=6, help="gzip level for the warc runs")
    parser.add_argument("--writer", action="store_true", help="CPU of each side of the writer's pipe")
    parser.add_argument("--against", metavar="REV", help="with --writer: also the code of revision REV")
    parser.add_argument("--writer-child", type=int, metavar="PAGES", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer_child:
        print(json.dumps(asyncio.run(feed_writer(args.writer_child, args.level))))
        return 0
    if args.writer:
        writer_ab(args.pages, args.rounds, args.level, args.against)
        return 0

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
