"""Many hosts at once at the default politeness: archiver next to Scrapy, in one run.

N hosts of P pages each (`bench.hosts_site`, one server process, hosts on 127.0.0.2 and
up), every crawler at archiver's defaults: 0.25 s between two requests to a host, 4 at once
per host, 10 at once in all, robots.txt obeyed.  Each crawler runs in a fresh child
process; its wall time, peak RSS (from wait4) and whether it fetched every URL are
reported, with the load average.  The floor is what politeness alone allows: the largest
host's requests (pages, stylesheet, robots.txt) one gap apart.  With `--response-delay S`
each response takes S seconds, and the task bound is what 10 requests at once allow: the
requests the server answered that crawler (pages, stylesheets, robots.txt, and anything else
it asked for, such as archiver's /sitemap.xml) x S / 10.  "vs bound" is the wall time over
the larger of the two bounds.  "in flight" is how many requests the server held at once on
average, from the crawler's first request to its last answer (at most 10).

    python -m bench.bench_hosts                          # 20 x 100 and 200 x 20, archiver and Scrapy
    python -m bench.bench_hosts --sites 5000x5 --tools archiver --without index
    python -m bench.bench_hosts --sites 5000x5 --tools archiver --without index --response-delay 0.05
    python -m bench.bench_hosts --against c1c6f1a        # archiver of that revision too
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import hosts_site
from .bench_crawl import source_of
from .tools import scrapy_python

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DEFAULT_GAP = 0.25
CONCURRENCY = 10
"""Requests at once in all: archiver's default `max_tasks`, and Scrapy's CONCURRENT_REQUESTS here."""


@dataclass
class Run:
    tool: str
    wall: float
    cpu: float
    peak_mb: float
    fetched: int
    missing: int
    requests: int = 0
    """Requests the server answered during the run."""
    in_flight: float = 0.0
    """Requests the server held at once on average, from the run's first request to its last answer."""


def timed(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of `command`, run to completion."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        print(f"{command[0]} exited {proc.returncode}: {err[-2000:]}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def archiver_run(
    roots: Path, work: Path, expected: set[str], revision: str | None, without: list[str]
) -> Run:
    archive = work / f"archive-{revision or 'current'}"
    env = {**os.environ}
    cwd = None
    if revision is not None:
        folder = work / f"rev-{revision}"
        path = folder / "path" if folder.exists() else source_of(revision, folder)
        env["PYTHONPATH"] = str(path)
        cwd = path  # not the repository, whose own `archiver` would come first
    command = [sys.executable, "-m", "archiver", "crawl", "-o", str(archive), "-q"]
    for name in without:
        command += ["--disable-plugin", name]
    command += ["-i", str(roots)] if revision is None else _roots_args(roots)
    wall, cpu, peak = timed(command, env, cwd)
    fetched = set()
    log = archive / "crawl-log.jsonl"
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("status") == 200:
                fetched.add(record["url"])
    name = "archiver" if revision is None else f"archiver@{revision}"
    return Run(name, wall, cpu, peak, len(fetched & expected), len(expected - fetched))


def _roots_args(roots: Path) -> list[str]:
    return [line for line in roots.read_text().splitlines() if line and not line.startswith("#")]


def scrapy_run(roots: Path, work: Path, expected: set[str]) -> Run:
    out = work / "scrapy.json"
    command = [str(scrapy_python()), str(BENCH / "scrapy_hosts.py"), str(roots), str(out)]
    command += ["--delay", str(DEFAULT_GAP), "--per-host", "4", "--concurrency", str(CONCURRENCY)]
    wall, cpu, peak = timed(command)
    fetched = {url for url, status in json.loads(out.read_text())["urls"].items() if status == 200}
    return Run("Scrapy", wall, cpu, peak, len(fetched & expected), len(expected - fetched))


def bench(
    hosts: int,
    pages: int,
    tools: list[str],
    against: str | None,
    without: list[str],
    response_delay: float = 0.0,
) -> list[Run]:
    port = hosts_site.free_port(hosts_site.host_address(0))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.hosts_site",
            "--hosts",
            str(hosts),
            "--pages",
            str(pages),
            "--port",
            str(port),
            "--response-delay",
            str(response_delay),
        ],
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()  # the port: listening on every address
        expected = hosts_site.expected_urls(hosts, pages, port)
        runs = []
        with tempfile.TemporaryDirectory(prefix="bench-hosts-") as folder:
            work = Path(folder)
            roots = work / "roots.txt"
            roots.write_text("\n".join(hosts_site.root_urls(hosts, port)) + "\n")
            chosen: list[Callable[[], Run]] = []
            if against and "archiver" in tools:
                chosen.append(lambda: archiver_run(roots, work, expected, against, without))
            if "archiver" in tools:
                chosen.append(lambda: archiver_run(roots, work, expected, None, without))
            if "scrapy" in tools:
                chosen.append(lambda: scrapy_run(roots, work, expected))
            for run_one in chosen:
                before = hosts_site.served(port)
                busy_before, _, _ = hosts_site.busy(port)
                run = run_one()
                run.requests = hosts_site.served(port) - before
                busy_after, first, last = hosts_site.busy(port)
                run.in_flight = (busy_after - busy_before) / (last - first) if last > first else 0.0
                runs.append(run)
        return runs
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sites", nargs="+", default=["20x100", "200x20"], metavar="HOSTSxPAGES")
    parser.add_argument("--tools", default="archiver,scrapy")
    parser.add_argument("--against", metavar="REV", help="also run archiver of this git revision")
    parser.add_argument(
        "--without", action="append", default=[], metavar="PLUGIN", help="archiver runs without this plugin"
    )
    parser.add_argument(
        "--response-delay",
        type=float,
        default=0.0,
        metavar="S",
        help="the server holds every response S seconds (default 0: the crawl is bound by CPU)",
    )
    args = parser.parse_args()
    tools = args.tools.split(",")
    print(
        "| hosts x pages | crawler | wall s | vs Scrapy | CPU s | politeness floor s | requests"
        " | task bound s | vs bound | in flight | peak RSS MB | URLs fetched | missing | load |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for spec in args.sites:
        hosts, pages = (int(n) for n in spec.split("x"))
        floor = (pages + 1) * DEFAULT_GAP  # pages + stylesheet + robots.txt, one gap apart
        load = os.getloadavg()
        runs = bench(hosts, pages, tools, args.against, args.without, args.response_delay)
        reference = next((r.wall for r in runs if r.tool == "Scrapy"), None)
        for run in runs:
            ratio = f"{run.wall / reference:.2f}x" if reference else "-"
            task_bound = run.requests * args.response_delay / CONCURRENCY
            bound = f"{run.wall / max(floor, task_bound):.2f}x"
            print(
                f"| {hosts} x {pages} | {run.tool} | {run.wall:.1f} | {ratio} | {run.cpu:.1f} | {floor:.1f} |"
                f" {run.requests:,} | {task_bound:.1f} | {bound} | {run.in_flight:.2f} | {run.peak_mb:.0f} |"
                f" {run.fetched:,} | {run.missing:,} |"
                f" {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
