"""What the browser capture costs: pages per second with `--browser` at 1, 2 and 4 tabs.

Generates (or reuses) the bench site (bench.sitegen), serves it with nginx (bench.server) and
crawls it with `archiver crawl --browser --browser-tabs N` (links + WARC; index and sitemap
off), each run in a fresh subprocess, next to a reference crawl without the browser made in
the same command.  For each run: pages rendered, wall seconds, rendered pages per second,
all pages per second, CPU seconds of the whole tree, and the peak RSS of the Chromium
processes (every process whose command line names chromium), of Playwright's driver (node)
and of the whole tree, sampled from /proc every 100 ms.  After each browser run, the plain
Playwright loop (bench.playwright_loop: goto until the network is idle, read the DOM) over as
many of the site's pages at the same tab count, in the same command: the `vs plain` column is
the browser run's rendered pages per second over the loop's.

    python -m bench.bench_browser                       # 2,000-page site, tabs 1, 2, 4
    python -m bench.bench_browser --max-pages 300       # stop queueing after 300 URLs
    python -m bench.bench_browser --tabs 2 --keep
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import server as bench_server
from bench import sitegen
from bench.measure import PAGE_SIZE, process_tree
from bench.tools import crawl_command


@dataclass(frozen=True)
class Run:
    name: str
    tabs: int
    pages: int
    rendered: int
    wall_seconds: float
    cpu_seconds: float
    peak_browser_rss_mb: float
    peak_driver_rss_mb: float
    peak_tree_rss_mb: float
    notes: int

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.wall_seconds

    @property
    def rendered_per_second(self) -> float:
        return self.rendered / self.wall_seconds


def _role(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "chrom" in cmdline:
        return "browser"
    if "playwright" in cmdline or os.path.basename(cmdline.split(" ", 1)[0]) == "node":
        return "driver"
    return "other"


class Sampler(threading.Thread):
    """Peak RSS by role (browser, driver, whole tree) of a process tree, every 100 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = {"browser": 0, "driver": 0, "tree": 0}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            sums = {"browser": 0, "driver": 0, "tree": 0}
            for pid in process_tree(self.pid):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
                    sums["tree"] += rss
                    role = _role(pid)
                    if role in sums:
                        sums[role] += rss
            for key, value in sums.items():
                self.peak[key] = max(self.peak[key], value)


@dataclass(frozen=True)
class Sampled:
    """How a command ran: its exit code, wall and CPU seconds, and its tree's peak RSS by role."""

    code: int
    wall_seconds: float
    cpu_seconds: float
    peak: dict[str, int]


def run_sampled(command: list[str], out: Path, err: Path, timeout: float) -> Sampled:
    """Run `command` in a session of its own, its output to `out` and `err`, sampling its
    process tree's memory; the whole tree is ended after `timeout` seconds or when it exits."""
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True
        )
        sampler = Sampler(process.pid)
        sampler.start()
        timer = threading.Timer(timeout, lambda: os.killpg(process.pid, signal.SIGTERM))
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        timer.cancel()
        sampler.done.set()
        sampler.join()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    code = os.waitstatus_to_exitcode(status)
    return Sampled(code, wall, usage.ru_utime + usage.ru_stime, dict(sampler.peak))


def measure(name: str, tabs: int, command: list[str], workdir: Path, timeout: float) -> Run:
    out, err = workdir / f"{name}.out", workdir / f"{name}.err"
    ran = run_sampled(command, out, err, timeout)
    if ran.code != 0:
        raise SystemExit(f"{name}: archiver failed; see {err}")
    report = json.loads(out.read_text())
    plugins = report.get("plugins", {})
    mb = 1024 * 1024
    return Run(
        name=name,
        tabs=tabs,
        pages=int(report["pages"]),
        rendered=int(plugins.get("browser.pages", 0)),
        wall_seconds=ran.wall_seconds,
        cpu_seconds=ran.cpu_seconds,
        peak_browser_rss_mb=ran.peak["browser"] / mb,
        peak_driver_rss_mb=ran.peak["driver"] / mb,
        peak_tree_rss_mb=ran.peak["tree"] / mb,
        notes=int(plugins.get("browser.notes", 0)),
    )


def plain_loop(name: str, tabs: int, urls: list[str], workdir: Path, timeout: float) -> Run:
    """The reference: bench.playwright_loop over `urls` with `tabs` tabs, in a fresh process."""
    listing = workdir / f"{name}.urls"
    listing.write_text("".join(f"{url}\n" for url in urls))
    command = [sys.executable, "-m", "bench.playwright_loop", str(listing), "--tabs", str(tabs)]
    out, err = workdir / f"{name}.out", workdir / f"{name}.err"
    ran = run_sampled(command, out, err, timeout)
    if ran.code != 0:
        raise SystemExit(f"{name}: the Playwright loop failed; see {err}")
    loaded = int(json.loads(out.read_text())["pages"])
    mb = 1024 * 1024
    return Run(
        name=name,
        tabs=tabs,
        pages=loaded,
        rendered=loaded,
        wall_seconds=ran.wall_seconds,
        cpu_seconds=ran.cpu_seconds,
        peak_browser_rss_mb=ran.peak["browser"] / mb,
        peak_driver_rss_mb=ran.peak["driver"] / mb,
        peak_tree_rss_mb=ran.peak["tree"] / mb,
        notes=0,
    )


def page_urls(site: Path, origin: str) -> list[str]:
    """The site's HTML pages that answer 200, as absolute URLs on `origin`."""
    expected = json.loads((site / "expected.json").read_text())
    paths = [path for path, url in expected["urls"].items() if url["kind"] == "page" and url["status"] == 200]
    return [origin.rstrip("/") + path for path in paths]


def site_for(pages: int, seed: int, cache: Path) -> Path:
    out = cache / f"site-{pages}-{seed}"
    expected = out / "expected.json"
    if not (expected.exists() and json.loads(expected.read_text()).get("format") == sitegen.FORMAT_VERSION):
        sitegen.generate(out, pages, seed)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2_000, help="pages of the generated site")
    parser.add_argument("--seed", type=int, default=sitegen.DEFAULT_SEED)
    parser.add_argument("--tabs", default="1,2,4", help="comma-separated --browser-tabs values")
    parser.add_argument("--max-pages", type=int, default=0, help="archiver --max-pages (0: the whole site)")
    parser.add_argument("--concurrency", type=int, default=8, help="--max-tasks and --per-host-concurrency")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--keep", action="store_true", help="keep the archives")
    parser.add_argument("--output", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    site = site_for(args.pages, args.seed, args.cache)
    workdir = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    runs: list[Run] = []
    load = os.getloadavg()
    try:
        with bench_server.serving(site) as nginx:
            plain = ("index", "sitemap")
            limit = ["--max-pages", str(args.max_pages)] if args.max_pages else []
            command = crawl_command(nginx.url, workdir / "plain", args.concurrency, "sqlite", plain)
            runs.append(measure("no browser", 0, [*command, *limit], workdir, args.timeout))
            for tabs in (int(t) for t in args.tabs.split(",")):
                archive = workdir / f"tabs-{tabs}"
                command = crawl_command(nginx.url, archive, args.concurrency, "sqlite", plain)
                command += [*limit, "--browser", "--browser-tabs", str(tabs)]
                run = measure(f"browser, {tabs} tab(s)", tabs, command, workdir, args.timeout)
                runs.append(run)
                urls = page_urls(site, nginx.url)[: max(run.rendered, 1)]
                runs.append(plain_loop(f"plain Playwright, {tabs} tab(s)", tabs, urls, workdir, args.timeout))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    reference = runs[0]
    print(f"site: {args.pages} pages (seed {args.seed}), max_pages {args.max_pages or 'none'}; load {load}")
    print(
        "| run | pages | rendered | wall s | pages/s | rendered/s | ratio pages/s | CPU s |"
        " Chromium peak RSS MB | driver MB | tree MB | vs plain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    loops = {run.tabs: run for run in runs if run.name.startswith("plain")}
    for run in runs:
        ratio = run.pages_per_second / reference.pages_per_second
        versus = ""
        if run.name.startswith("browser") and run.tabs in loops:
            versus = f"{run.rendered_per_second / loops[run.tabs].rendered_per_second:.2f}"
        print(
            f"| {run.name} | {run.pages} | {run.rendered} | {run.wall_seconds:.1f} |"
            f" {run.pages_per_second:.2f} | {run.rendered_per_second:.2f} | {ratio:.3f} |"
            f" {run.cpu_seconds:.1f} | {run.peak_browser_rss_mb:.0f} | {run.peak_driver_rss_mb:.0f} |"
            f" {run.peak_tree_rss_mb:.0f} | {versus} |"
        )
    if args.output:
        figures: dict[str, Any] = {"load_before": load, "load_after": os.getloadavg(), "args": vars(args)}
        figures["runs"] = [asdict(run) for run in runs]
        args.output.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if args.keep:
        print(f"archives kept in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
