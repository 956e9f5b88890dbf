"""What `archiver qa` costs: pages checked per second per tab, and the peak RSS of the whole
process tree (Python, Playwright's driver and every Chromium process).

Generates (or reuses) the bench site (bench.sitegen), serves it with nginx (bench.server),
crawls it once (links + WARC; `--max-pages` URLs at most), then runs
`archiver qa ARCHIVE --sample N --tabs T --json` for each tab count, each in a fresh
subprocess, sampling /proc every 100 ms.  The first tab count is the reference of the ratio
column.  While the site is served, the plain Playwright loop (bench.playwright_loop: goto until
the network is idle, read the DOM) over as many of its pages at each tab count is the reference
of the `vs plain` column (QA's pages per second over the loop's).  QA of the bench site must
find nothing missing (its pages load only what their HTML
and CSS name, which the crawl fetches): the `missing` column says whether it did.

    python -m bench.bench_qa                                   # 2,000-page site, 40 pages, tabs 1 and 2
    python -m bench.bench_qa --pages 1000 --sample 30 --tabs 1,2,4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import server as bench_server
from bench.bench_browser import Run as LoopRun
from bench.bench_browser import page_urls, plain_loop, run_sampled, site_for
from bench.sitegen import DEFAULT_SEED
from bench.tools import crawl_command

MB = 1024 * 1024


@dataclass(frozen=True)
class Run:
    tabs: int
    pages: int
    complete: int
    missing: int
    wall_seconds: float
    cpu_seconds: float
    peak_tree_rss_mb: float
    peak_browser_rss_mb: float
    peak_driver_rss_mb: float

    @property
    def per_second_per_tab(self) -> float:
        return self.pages / self.wall_seconds / self.tabs


def measure(archive: Path, sample: int, tabs: int, workdir: Path, timeout: float) -> Run:
    command = [sys.executable, "-m", "archiver", "qa", str(archive), "--sample", str(sample)]
    command += ["--tabs", str(tabs), "--json"]
    out, err = workdir / f"qa-{tabs}.out", workdir / f"qa-{tabs}.err"
    ran = run_sampled(command, out, err, timeout)
    if ran.code not in (0, 1):  # 1: some page lacks something
        raise SystemExit(f"archiver qa failed; see {err}")
    result = json.loads(out.read_text())
    return Run(
        tabs=tabs,
        pages=int(result["pages_checked"]),
        complete=int(result["pages_complete"]),
        missing=int(result["missing_resources"]),
        wall_seconds=ran.wall_seconds,
        cpu_seconds=ran.cpu_seconds,
        peak_tree_rss_mb=ran.peak["tree"] / MB,
        peak_browser_rss_mb=ran.peak["browser"] / MB,
        peak_driver_rss_mb=ran.peak["driver"] / MB,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2_000, help="pages of the generated site")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--max-pages",
        type=int,
        default=0,
        help="URLs crawled at most (0: the whole site; a partial crawl"
        " leaves images out, which QA then names)",
    )
    parser.add_argument("--sample", type=int, default=40, help="pages checked per QA run")
    parser.add_argument("--tabs", default="1,2", help="comma-separated --tabs values")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--output", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    site = site_for(args.pages, args.seed, args.cache)
    workdir = Path(tempfile.mkdtemp(prefix="bench-qa-"))
    archive = workdir / "archive"
    runs: list[Run] = []
    loops: dict[int, LoopRun] = {}
    tab_counts = [int(t) for t in args.tabs.split(",")]
    load_before = os.getloadavg()
    try:
        with bench_server.serving(site) as nginx:
            command = crawl_command(nginx.url, archive, 8, "sqlite", ("index", "sitemap"))
            if args.max_pages:
                command += ["--max-pages", str(args.max_pages)]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=args.timeout)
            urls = page_urls(site, nginx.url)[: args.sample]
            for tabs in tab_counts:
                loops[tabs] = plain_loop(f"plain-{tabs}", tabs, urls, workdir, args.timeout)
        # the site is stopped: QA must not need it
        for tabs in tab_counts:
            runs.append(measure(archive, args.sample, tabs, workdir, args.timeout))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    reference = runs[0]
    crawled = args.max_pages or "all"
    print(f"site: {args.pages} pages (seed {args.seed}), crawled {crawled} URLs; QA of {args.sample} pages")
    print(f"load average before {load_before}, after {load_after}")
    print(
        "| tabs | pages | complete | missing | wall s | pages/s/tab | ratio | CPU s |"
        " tree peak RSS MB | Chromium MB | driver MB | plain pages/s | plain tree MB | vs plain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        loop = loops[run.tabs]
        ratio = run.per_second_per_tab / reference.per_second_per_tab
        print(
            f"| {run.tabs} | {run.pages} | {run.complete} | {run.missing} | {run.wall_seconds:.1f} |"
            f" {run.per_second_per_tab:.2f} | {ratio:.2f} | {run.cpu_seconds:.1f} |"
            f" {run.peak_tree_rss_mb:.0f} | {run.peak_browser_rss_mb:.0f} | {run.peak_driver_rss_mb:.0f} |"
            f" {loop.pages_per_second:.2f} | {loop.peak_tree_rss_mb:.0f} |"
            f" {run.pages / run.wall_seconds / loop.pages_per_second:.2f} |"
        )
    if args.output:
        figures: dict[str, Any] = {"load_before": load_before, "load_after": load_after, "args": vars(args)}
        figures["runs"] = [asdict(run) for run in runs]
        figures["plain_playwright"] = [asdict(loop) for loop in loops.values()]
        args.output.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
