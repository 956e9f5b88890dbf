"""Benchmark of the full-text index: indexing pages/s, query latency, crawl overhead.

    python bench/bench_index.py --pages 10000            # index + queries
    python bench/bench_index.py --pages 2000 --crawl     # also: crawl time with/without index
    python bench/bench_index.py --pages 2000 --crawl-only --repeat 3
    python bench/bench_index.py --pages 300 --analyzer          # analyzer CPU: filter chain vs one pass
    python bench/bench_index.py --pages 3000 --parallel 2       # catch-up, reindex, merge, peak RSS
    python bench/bench_index.py --memory-curve 1000,3000,10000  # peak RSS of the writer per size
    python bench/bench_index.py --memory-curve 3000 --against HEAD~3  # writer A/B: CPU, segments, queries

`--parallel N` spools the pages twice and drains each spool with a writer process using 1
and N worker processes (as after a crawl), compares the top 10 of the queries, then writes
the pages to WARC files and times `archiver reindex` with 1 and N processes, and
`archiver merge` of three worker archives (their indexes joined) against the rebuild it
replaces.  Every command runs in a child process; its peak RSS is the largest of the
process and the workers it started.  The machine's load average is printed with each
figure: compare the ratios inside one run.

Indexing goes through the real path: pages are spooled as a crawl spools them, then the
writer drains the spool (HTML parsing, analysis, tantivy commits), as after a crawl.
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
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from archiver_plugins.index.search import search
from archiver_plugins.index.spool import Spool
from archiver_plugins.index.store import Capture, engine_dir, spool_path
from archiver_plugins.index.writer import Control, run
from index_pages import pages, vocabulary

from archiver.hookspecs import hookimpl


def index_pages(archive: Path, count: int, batch_size: int) -> dict[str, float]:
    started = time.perf_counter()
    total_bytes = spool_pages(archive, count)
    spooled = time.perf_counter() - started
    started = time.perf_counter()
    cpu = time.process_time()
    run(archive, batch_size, 1e9, 200_000, control=Control("drain"), lock_wait=0)
    indexed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    size = sum(f.stat().st_size for f in engine_dir(archive).iterdir())
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
    from archiver.manager import make_plugin_manager
    from archiver.runner import run_crawl

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


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def analyzer_cpu(count: int) -> None:
    """CPU per page of the filter chain and of the one-pass analyzer, on the same text."""
    from archiver_plugins.index.schema import chain_text_analyzer, text_analyzer
    from archiver_plugins.markup.text import extract

    texts = [extract(body, "text/html", "utf-8", 200_000).text for _, body in pages(count)]
    figures = {}
    for name, make in (("filter chain", chain_text_analyzer), ("one pass", text_analyzer)):
        analyzer = make()
        best = float("inf")
        for _ in range(3):  # the first round fills the one-pass memo, as the first pages of a crawl do
            started = time.process_time()
            terms = [[t.text for t in analyzer(text, positions=True, mode="index")] for text in texts]
            best = min(best, time.process_time() - started)
        figures[name] = (best, terms)
    assert figures["filter chain"][1] == figures["one pass"][1]
    chain, one = figures["filter chain"][0] / count * 1000, figures["one pass"][0] / count * 1000
    print(
        f"analyzer CPU per page: filter chain {chain:.2f} ms, one pass {one:.2f} ms, ratio {one / chain:.2f}"
    )
    print(f"  ({count} pages, best of 3; {load()})")


def child(code: str, stdin: bytes | None = None, source: Path | None = None) -> tuple[float, float, float]:
    """Run Python `code` in a child process: (wall s, CPU s, peak RSS MB of the largest of it
    and its descendants).  The peak is each process's VmHWM, read every 50 ms: the
    rusage of a child also counts the parent's memory it was forked from.  With `source`
    (from `source_of`), the child runs that revision's code."""
    env = dict(os.environ, PYTHONPATH=str(source)) if source is not None else None
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE if stdin else None, env=env)
    if stdin:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    peak = 0
    while True:
        for pid in [proc.pid, *descendants(proc.pid)]:
            peak = max(peak, high_water_kib(pid))
        finished, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if finished:
            break
        time.sleep(0.05)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"bench child failed with {os.waitstatus_to_exitcode(status)}")
    proc.returncode = 0
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, peak / 1024


def descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def high_water_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def spool_pages(archive: Path, count: int) -> int:
    """Spool `count` generated pages into `archive`'s index spool; returns their bytes."""
    spool = Spool(spool_path(archive))
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
    spool.close()
    return total_bytes


def write_warcs(archive: Path, items: list[tuple[str, bytes]], name: str = "bench") -> None:
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    folder = archive / "warc"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}-00000.warc.gz").open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, body in items:
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=BytesIO(body),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": "2024-05-01T12:00:00Z"},
            )
            writer.write_record(record)


def top10(archive: Path) -> dict[str, tuple[list[float], list[str]]]:
    """Each query's top 10: its scores, and the URLs scored above the tenth (the order of
    equal scores, and so which of them make the cut, follows the documents' segments)."""
    found = {}
    for text in queries():
        hits = search(archive, text, limit=10, with_snippets=False, time_limit=600).hits
        scores = [round(hit.score, 5) for hit in hits]
        cut = scores[-1] if len(scores) == 10 else -1.0
        found[text] = (scores, sorted(hit.url for hit in hits if round(hit.score, 5) > cut))
    return found


def compared(one: dict[str, Any], two: dict[str, Any]) -> str:
    """'same', or the queries whose top 10 differ (in URLs above the cut, or only in scores:
    whoosh scores a prefix query's expansions segment by segment)."""
    urls = [q for q in one if one[q][1] != two[q][1]]
    scores = [q for q in one if one[q][0] != two[q][0] and q not in urls]
    if not urls and not scores:
        return "same"
    return f"URLs differ for {urls or 'none'}; only scores differ for {scores or 'none'}"


def reindex_code(archive: Path, processes: int) -> str:
    return (
        "from pathlib import Path\nfrom archiver_plugins.index.reindex import reindex\n"
        f"reindex(Path({str(archive)!r}), processes={processes})"
    )


def compare_parallel(count: int, processes: int, folder: Path) -> None:
    rows: list[tuple[str, float, float, float, str]] = []

    def note(what: str, figures: tuple[float, float, float]) -> None:
        rows.append((what, *figures, load()))
        wall, cpu, rss = figures
        print(
            f"{what:34} wall {wall:7.1f} s  CPU {cpu:7.1f} s  peak RSS {rss:6.0f} MB  ({load()})", flush=True
        )

    catch_up = {}
    for n in (1, processes):
        archive = folder / f"catch-up-{n}"
        spool_pages(archive, count)
        drain = f"""
import sys
from pathlib import Path
from archiver_plugins.index.writer import main
sys.exit(main([{str(archive)!r}, "--processes", "{n}", "--batch-size", "500"]))
"""
        catch_up[n] = child(drain, stdin=b"drain\n")
        note(f"catch-up of {count:,} pages, {n} process{'es' if n > 1 else ''}", catch_up[n])
        print(f"  {segments(archive)} segments", flush=True)
    print(
        f"  catch-up {processes} vs 1 process: {catch_up[processes][0] / catch_up[1][0]:.2f}x the wall time"
    )
    same = compared(top10(folder / "catch-up-1"), top10(folder / f"catch-up-{processes}"))
    print(f"  top 10 of {len(queries())} queries, 1 vs {processes} processes: {same}")

    everything = list(pages(count))
    archive = folder / "warcs"
    write_warcs(archive, everything)
    rebuild = {}
    for n in (1, processes):
        rebuild[n] = child(reindex_code(archive, n))
        note(f"reindex of {count:,} pages, {n} process{'es' if n > 1 else ''}", rebuild[n])
        print(f"  {segments(archive)} segments", flush=True)
    print(f"  reindex {processes} vs 1 process: {rebuild[processes][0] / rebuild[1][0]:.2f}x the wall time")
    print(f"  top 10, reindex vs catch-up: {compared(top10(archive), top10(folder / 'catch-up-1'))}")

    sources = []
    for number in range(3):
        source = folder / f"worker{number}"
        write_warcs(source, everything[number::3], f"worker{number}")
        child(reindex_code(source, 1))
        sources.append(source)
    merged = folder / "merged"
    merge = f"""
from pathlib import Path
from archiver.merge import merge_archives
from archiver.manager import make_plugin_manager
pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.warc", "archiver_plugins.index"])
sources = [Path(p) for p in {[str(s) for s in sources]!r}]
merge_archives(sources, Path({str(merged)!r}), copy=True, plugin_manager=pm)
"""
    joined = child(merge)
    note("merge of 3 worker archives", joined)
    same = compared(top10(merged), top10(folder / "catch-up-1"))
    rebuilt = child(reindex_code(merged, 1))
    note("the rebuild merge did before", rebuilt)
    print(f"  merge vs rebuild: {rebuilt[0] / joined[0]:.1f}x faster; top 10 against the catch-up: {same}")


def segments(archive: Path) -> int:
    import json

    meta = json.loads((engine_dir(archive) / "meta.json").read_text())
    return len(meta["segments"])


def memory_curve(
    counts: list[int], batch_size: int, folder: Path, against: str | None = None, rounds: int = 5
) -> None:
    """Peak RSS and CPU of one writer process (as while a crawl runs, or with processes = 1)
    that drains a spool of each size: flat when the writer's memory does not grow with
    pages; then the index's segments and the latency of the bench queries (without
    snippets) over them.  With `against`, that revision's writer drains the same spool
    just before."""
    from bench.bench_crawl import source_of

    revisions: list[tuple[str, Path | None]] = [("current", None)]
    if against:
        revisions.insert(0, (against, source_of(against, folder / "against")))
    for count in counts:
        spooled = folder / f"spool-{count}"
        spool_pages(spooled, count)
        for label, source in revisions:
            archive = folder / f"curve-{count}"
            shutil.copytree(spooled, archive)
            drain = f"""
import sys
from archiver_plugins.index.writer import main
sys.exit(main([{str(archive)!r}, "--processes", "1", "--batch-size", "{batch_size}"]))
"""
            wall, cpu, rss = child(drain, stdin=b"drain\n", source=source)
            latency = time_queries(archive, snippets=False, rounds=rounds)
            print(
                f"writer ({label}), {count:7,} pages: peak RSS {rss:6.0f} MB  wall {wall:7.1f} s"
                f"  CPU {cpu:7.1f} s = {cpu / count * 1000:5.1f} ms a page  {segments(archive):4} segments"
                f"  query p50 {latency['p50_ms']:6.1f} ms p95 {latency['p95_ms']:6.1f} ms  ({load()})",
                flush=True,
            )
            shutil.rmtree(archive, ignore_errors=True)
        shutil.rmtree(spooled, ignore_errors=True)


DOC_QUERIES = [
    "event loop",
    '"event loop"',
    '"context manager"',
    "asyncio",
    "dict",
    "str join",
    "list comprehension",
    "subprocess timeout",
    "json",
    "title:logging",
    "async*",
    "socket NOT ssl",
    "unicode",
    "decorator",
    "tutorial",
    "threading lock",
    '"keyword argument"',
    "zipfile",
]
"""Queries for a crawled archive (the Python documentation served locally)."""


def measured(archive: Path, query_texts: list[str], rounds: int) -> dict[str, Any]:
    """Latency with and without snippets and each query's top 10, by the `search` of the
    process that runs this (a child of one revision)."""
    from archiver_plugins.index.search import close_all

    found: dict[str, Any] = {"top10": {}}
    for text in query_texts:
        hits = search(archive, text, limit=10, with_snippets=False, time_limit=600).hits
        scores = [round(hit.score, 5) for hit in hits]
        cut = scores[-1] if len(scores) == 10 else -1.0
        found["top10"][text] = [scores, sorted(hit.url for hit in hits if round(hit.score, 5) > cut)]
    for snippets in (False, True):
        close_all()  # the first round of each pays for opening the index, as a new process does
        timings: list[float] = []
        spent: list[float] = []
        for _ in range(rounds):
            for text in query_texts:
                started, cpu = time.perf_counter(), time.process_time()
                search(archive, text, limit=10, with_snippets=snippets)
                timings.append(time.perf_counter() - started)
                spent.append(time.process_time() - cpu)
        label = "snippets" if snippets else "plain"
        for key, values in ((label, timings), (label + " cpu", spent)):
            values.sort()
            found[key] = [1000 * statistics.median(values), 1000 * values[int(len(values) * 0.95) - 1]]
    return found


def extracted_bytes(warcs: list[Path]) -> tuple[int, int]:
    """(pages, UTF-8 bytes of the text extracted from them) of the WARC files' indexable pages."""
    from archiver_plugins.index.reindex import ReindexStats, iter_captures
    from archiver_plugins.index.store import make_document

    pages_seen = total = 0
    for capture in iter_captures(warcs, ReindexStats()):
        pages_seen += 1
        total += len(str(make_document(capture)["text"]).encode("utf-8"))
    return pages_seen, total


def bench_archive(count: int, folder: Path) -> Path:
    """`count` bench pages written as a crawl leaves them: a WARC file and its CDXJ index."""
    from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc, write_cdxj

    archive = folder / "bench-pages"
    write_warcs(archive, list(pages(count)))
    for warc in (archive / "warc").glob("*.warc.gz"):
        write_cdxj(cdxj_path_for(warc), index_warc(warc))
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crawl", action="store_true", help="also compare crawls with and without the index")
    parser.add_argument("--crawl-only", action="store_true", help="only compare crawls")
    parser.add_argument("--repeat", type=int, default=1, help="crawl pairs to run (medians are shown)")
    parser.add_argument("--crawl-share", type=float, help="[plugins.index] crawl_share for the crawls")
    parser.add_argument(
        "--analyzer", action="store_true", help="only: analyzer CPU, filter chain vs one pass"
    )
    parser.add_argument(
        "--parallel", type=int, metavar="N", help="only: catch-up, reindex, merge with N processes"
    )
    parser.add_argument(
        "--memory-curve", metavar="N,N,...", help="only: peak RSS of the writer process for each page count"
    )
    parser.add_argument("--against", metavar="REV", help="with --memory-curve: REV's code too")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-index-"))
    try:
        if args.memory_curve:
            counts = [int(n) for n in args.memory_curve.split(",")]
            memory_curve(counts, args.batch_size, folder, args.against, args.rounds)
        elif args.analyzer:
            analyzer_cpu(args.pages)
        elif args.parallel:
            compare_parallel(args.pages, args.parallel, folder)
        elif not args.crawl_only:
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
