"""Peak disk of an archive during a crawl against its final size (the index's spool is the backlog).

    python -m bench.bench_spool                        # the local Python docs, this tree
    python -m bench.bench_spool --against main         # ... and the code of `main`, interleaved
    python -m bench.bench_spool --pages 10000 --against main   # the generated bench site instead
    python -m bench.bench_spool --catch-up --against main --repeat 3   # CPU a page of the catch-up

The site (``--site DIR``, by default Debian's Python documentation; with ``--pages N`` a bench
site of N pages written by `sitegen` first, its redirects left out) is served by
``python3 -m http.server`` in a process of its own, and crawled with ``archiver crawl ROOT -o OUT
--delay 0 --per-host-concurrency 8`` (every bundled plugin, the index waiting for its writer at
the end).  The archive's size (the bytes of its files, WAL files included) is sampled every 0.1 s
until the command exits; the peak, its parts at that moment (WARC, index, spool, the rest) and the
final size are printed, with the wall time and the machine's load average.  `--against REV`
runs the code of that git revision too, the runs of both alternating (`--repeat`), so load
changes hit both.

`--catch-up` measures the index writer's side instead: the crawl leaves its pages in the
spool (``wait = false``, ``crawl_share = 0.01``: the writer hardly runs during the crawl), then
``archiver reindex --pending OUT --processes 1`` indexes them; its CPU time (user + system,
from the kernel's accounting of the child) a page is printed, with the spool's size before.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from bench.bench_crawl import source_of
from bench.server import free_port

DOCS = Path("/usr/share/doc/python3.11/html")
SAMPLE_SECONDS = 0.1


@dataclass
class Sizes:
    """Bytes of an archive's files by part."""

    warc: int = 0
    index: int = 0
    spool: int = 0
    rest: int = 0

    @property
    def total(self) -> int:
        return self.warc + self.index + self.spool + self.rest


def sizes_of(archive: Path) -> Sizes:
    sizes = Sizes()
    for folder, _dirs, files in os.walk(archive):
        for name in files:
            try:
                size = os.stat(os.path.join(folder, name)).st_size
            except OSError:  # removed while we walked (a merged segment, a closed line file)
                continue
            part = Path(folder).relative_to(archive).parts[:1]
            if part == ("warc",):
                sizes.warc += size
            elif part == ("index",) and name.startswith("spool.sqlite"):
                sizes.spool += size
            elif part == ("index",):
                sizes.index += size
            else:
                sizes.rest += size
    return sizes


@dataclass
class Run:
    label: str
    wall: float
    final: Sizes
    peak: Sizes
    samples: int
    load: tuple[float, float, float]
    spool_peak: int = 0
    caught_up: int = 0
    """Pages `reindex --pending` indexed (`--catch-up`)."""
    catch_up_cpu: float = 0.0

    @property
    def per_page_ms(self) -> float:
        return self.catch_up_cpu / max(self.caught_up, 1) * 1e3

    @property
    def ratio(self) -> float:
        return self.peak.total / max(self.final.total, 1)


def crawl(root: str, out: Path, source: Path | None, label: str, catch_up: bool = False) -> Run:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "archiver", "crawl", root, "-o", str(out), "--delay", "0"]
    command += ["--per-host-concurrency", "8", "-q"]
    if catch_up:
        config = out.with_name(out.name + ".toml")
        config.write_text("[plugins.index]\nwait = false\ncrawl_share = 0.01\n")
        command += ["-c", str(config)]
    peak = Sizes()
    spool_peak = 0
    samples = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, spool_peak, samples
        while not done.wait(SAMPLE_SECONDS):
            now = sizes_of(out) if out.exists() else Sizes()
            samples += 1
            spool_peak = max(spool_peak, now.spool)
            if now.total > peak.total:
                peak = now

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    if result.returncode != 0:
        raise SystemExit(f"{label}: archiver crawl exited with {result.returncode}: {result.stderr[-2000:]}")
    final = sizes_of(out)
    if final.total > peak.total:
        peak = final
    run = Run(label, wall, final, peak, samples, os.getloadavg(), spool_peak)
    if catch_up:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        result = subprocess.run(
            [sys.executable, "-m", "archiver", "reindex", "--pending", str(out), "--processes", "1"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        found = re.search(r"indexed ([\d,]+) waiting pages", result.stdout + result.stderr)
        if result.returncode != 0 or found is None:
            raise SystemExit(f"{label}: reindex --pending failed: {result.stdout}{result.stderr[-2000:]}")
        run.caught_up = int(found.group(1).replace(",", ""))
        run.catch_up_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return run


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1):
                return server, port
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the site server did not start")


def mb(size: int) -> str:
    return f"{size / 1e6:.1f}"


def report(runs: list[Run]) -> None:
    print(
        "| code | wall s | final MB (WARC / index / spool / rest) | peak MB (WARC / index / spool / rest)"
        " | peak / final | spool peak MB | load |"
    )
    print("|---|---:|---|---|---:|---:|---|")
    for run in runs:
        final, peak = run.final, run.peak
        print(
            f"| {run.label} | {run.wall:.1f} | {mb(final.total)} ({mb(final.warc)} / {mb(final.index)} /"
            f" {mb(final.spool)} / {mb(final.rest)}) | {mb(peak.total)} ({mb(peak.warc)} / {mb(peak.index)} /"
            f" {mb(peak.spool)} / {mb(peak.rest)}) | {run.ratio:.2f}x | {mb(run.spool_peak)} |"
            f" {' '.join(f'{x:.1f}' for x in run.load)} |"
        )
    labels = sorted({run.label for run in runs})
    if any(run.caught_up for run in runs):
        print("\n| code | spool MB before | pages caught up | CPU s | CPU ms a page | load |")
        print("|---|---:|---:|---:|---:|---|")
        for run in runs:
            load = " ".join(f"{x:.1f}" for x in run.load)
            print(
                f"| {run.label} | {mb(run.final.spool)} | {run.caught_up} | {run.catch_up_cpu:.2f} |"
                f" {run.per_page_ms:.2f} | {load} |"
            )
        for label in labels:
            mine = [run.per_page_ms for run in runs if run.label == label]
            print(f"{label}: catch-up CPU median {statistics.median(mine):.2f} ms a page, {len(mine)} runs")
    if len(runs) > len(labels):
        for label in labels:
            mine = [run.ratio for run in runs if run.label == label]
            print(f"{label}: peak / final median {statistics.median(mine):.2f}x over {len(mine)} runs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=DOCS, help="folder to serve (default: the Python docs)")
    parser.add_argument("--root", default="index.html", help="path of the first page under the site")
    parser.add_argument("--pages", type=int, help="crawl a generated bench site of this many pages instead")
    parser.add_argument("--against", metavar="REV", help="also run this git revision, interleaved")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="leave the archives in this folder")
    parser.add_argument("--catch-up", action="store_true", help="measure the catch-up's CPU a page instead")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-spool-") as tmp:
        work = Path(tmp)
        site = args.site
        if args.pages:
            from bench.sitegen import generate

            generate(work / "site", pages=args.pages)
            site = work / "site" / "site"
        if not (site / args.root).exists():
            raise SystemExit(f"{site / args.root} does not exist (--site, --root)")
        variants: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.against:
            variants.insert(0, (f"@{args.against}", source_of(args.against, work / "against")))
        server, port = serve(site)
        runs: list[Run] = []
        try:
            for number in range(args.repeat):
                for label, source in variants:
                    out = work / f"archive-{number}-{len(runs)}"
                    run = crawl(f"http://127.0.0.1:{port}/{args.root}", out, source, label, args.catch_up)
                    runs.append(run)
                    print(
                        f"{label}: peak {mb(run.peak.total)} MB, final {mb(run.final.total)} MB,"
                        f" {run.ratio:.2f}x, {run.wall:.1f} s, load {run.load[0]:.1f}",
                        flush=True,
                    )
                    if args.keep:
                        args.keep.mkdir(parents=True, exist_ok=True)
                        shutil.move(str(out), str(args.keep / out.name))
                    else:
                        shutil.rmtree(out)
        finally:
            server.kill()
            server.wait()
        report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
