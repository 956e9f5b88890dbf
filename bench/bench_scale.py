"""How the default pipeline scales with the size of a site: the curve from 10,000 pages up.

    python -m bench.bench_scale                          # 10,000 and 100,000 pages
    python -m bench.bench_scale --sizes 10000 100000 1000000

For each size: the bench site (`bench/sitegen.py`, cached under `--cache`) served by nginx, one
`archiver crawl` with the default plugins (links + WARC + index; sitemap off, as `bench.run`
runs it: the site has none), at `bench.run`'s knobs (no delay, no robots.txt, 100 at once).
While it runs, the archive's disk use is sampled every half second (its peak against its
final size) and the RSS of every process of the crawl's tree every 50 ms. Afterwards, on the
archive as the crawl left it:

- bytes per page of the WARC files, the index, the spool and `state.sqlite`;
- `archiver search` latency, p50 and p95 with snippets, of queries made of words taken from the
  index itself at several document frequencies (common, middle, rare, two words, a phrase, a
  prefix), each round in a fresh child process so the first query pays for opening the index;
- the wall time of `archiver status ARCHIVE` and `archiver why ARCHIVE URL` as a user runs them
  (a new process each, start-up included), for a URL near the end of the crawl log.

Wall per page is compared with the smallest size of the same run: the target is that the
largest stays within 1.2x of it. The machine's load average is printed with each size.

A second table splits the CPU per URL by process (`bench/measure.py` samples each process's
utime + stime every 50 ms): the crawler, the WARC writer, the index writer, its worker
processes (the catch-up after the crawl) and the rest (what the samples missed of processes'
last moments, nginx is not counted at all), to show which one grows with the crawl's size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import server, tools
from bench.measure import run_measured
from bench.run import site_for

BENCH = Path(__file__).resolve().parent
CONCURRENCY = 100
PROCESSES = {
    "crawler": "archiver crawl",
    "WARC writer": "archiver_plugins.warc.worker",
    "index writer": "archiver_plugins.index.writer",
    "index workers": "archiver_plugins.index.writer worker",
}
"""The columns of the CPU table: the name `bench.measure.process_name` gives each process."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def disk_bytes(folder: Path) -> int:
    """Bytes the folder holds on disk (allocated blocks: a sparse or preallocated file counts
    for what it takes)."""
    total = 0
    for directory, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


class DiskSampler(threading.Thread):
    def __init__(self, folder: Path, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.interval = interval
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.interval):
            if self.folder.exists():
                self.peak = max(self.peak, disk_bytes(self.folder))


QUERY_CODE = """
import json, statistics, sys, time
from archiver_plugins.index.search import search
archive, texts = sys.argv[1], json.loads(sys.argv[2])
timings = []
for text in texts:
    started = time.perf_counter()
    results = search(archive, text, limit=10, with_snippets=True)
    timings.append((time.perf_counter() - started, results.total))
print(json.dumps(timings))
"""

PICK_CODE = """
import json, sys
from archiver_plugins.index.store import open_engine
from pathlib import Path
index = open_engine(Path(sys.argv[1]))
words = [(pages, term) for term, pages in index.terms_with_prefix("text", "", 5_000_000)]
words = [w for w in words if w[1].isalpha() and len(w[1]) > 3]
words.sort(reverse=True)
print(json.dumps([term for _, term in words]))
"""


def queries(archive: Path) -> list[str]:
    """Queries of words the index holds, by document frequency: the same shape at every size."""
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    out = subprocess.run(
        [sys.executable, "-c", PICK_CODE, str(archive)], capture_output=True, text=True, env=env, check=True
    )
    words: list[str] = json.loads(out.stdout)
    if len(words) < 10:
        return words
    n = len(words)
    common, middle, rare = words[2], words[n // 10], words[n - n // 5]
    return [
        common,
        words[n // 100],
        middle,
        rare,
        f"{common} {middle}",
        f"{words[5]} {words[50]}",
        f'"{words[1]} {words[3]}"',
        f"{middle[:4]}*",
        f"title:{words[20]}",
        f"{common} NOT {words[7]}",
    ]


def search_latency(archive: Path, texts: list[str], rounds: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    timings: list[float] = []
    totals: dict[str, int] = {}
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, "-c", QUERY_CODE, str(archive), json.dumps(texts)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=600,
        )
        for text, (seconds, total) in zip(texts, json.loads(out.stdout), strict=True):
            timings.append(seconds)
            totals[text] = total
    timings.sort()
    return {
        "p50_ms": round(1000 * statistics.median(timings), 1),
        "p95_ms": round(1000 * timings[max(0, int(len(timings) * 0.95) - 1)], 1),
        "max_ms": round(1000 * timings[-1], 1),
        "hits": totals,
    }


def command_seconds(arguments: list[str]) -> float:
    """Wall time of one `archiver` command as a user runs it (a new process)."""
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "archiver", *arguments],
        capture_output=True,
        env=env,
        check=True,
        timeout=120,
    )
    return round(time.perf_counter() - started, 3)


def last_fetched_url(archive: Path) -> str:
    """A URL near the end of the crawl log: the one a scan from the start reaches last."""
    with (archive / "crawl-log.jsonl").open("rb") as log_file:
        log_file.seek(max(0, (archive / "crawl-log.jsonl").stat().st_size - 65536))
        lines = log_file.read().splitlines()[1:]
    for line in reversed(lines):
        record = json.loads(line)
        if record.get("outcome") == "fetched":
            return str(record["url"])
    raise SystemExit("no fetched URL at the end of the crawl log")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def one_size(pages: int, args: argparse.Namespace) -> dict[str, Any]:
    site_dir, expected = site_for(pages, args.seed, args.cache)
    workdir = Path(tempfile.mkdtemp(prefix=f"scale-{pages}-", dir=args.cache))
    archive = workdir / "archive"
    row: dict[str, Any] = {"pages": pages, "urls_expected": expected["count"], "load_at_start": load()}
    with server.start(site_dir) as nginx:
        command = tools.crawl_command(
            nginx.url, archive, CONCURRENCY, "sqlite", tools.ARCHIVER_PLUGINS["archiver"]
        )
        log(f"{pages}: {' '.join(command)} (load {row['load_at_start']})")
        sampler = DiskSampler(archive)
        sampler.start()
        env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
        measured = run_measured(
            command,
            timeout=args.timeout,
            stdout=workdir / "stdout",
            stderr=workdir / "stderr",
            cwd=BENCH.parent,
            env=env,
        )
        sampler.done.set()
        sampler.join()
    log(f"{pages}: crawl exited {measured.returncode} after {measured.wall_seconds:.1f} s")
    if measured.returncode != 0 or measured.timed_out:
        raise SystemExit(
            f"{pages}: crawl exited {measured.returncode}: {(workdir / 'stderr').read_text()[-800:]}"
        )
    report = json.loads((workdir / "stdout").read_text())
    row.update(
        wall_s=round(measured.wall_seconds, 1),
        crawl_s=round(float(report.get("wall_seconds") or 0), 1),
        cpu_s=round(measured.user_seconds + measured.system_seconds, 1),
        peak_rss_mb={name: round(kb / 1024) for name, kb in measured.process_peaks_kb.items()},
        cpu_s_by_process={name: round(s, 2) for name, s in measured.process_cpu_seconds.items()},
        cpu_unsampled_s=round(measured.unsampled_cpu_seconds, 2),
    )
    measure_archive(archive, row, args.rounds, sampler.peak)
    row["cpu_ms_per_url_by_process"] = cpu_per_url(row)
    log(f"{pages}: {json.dumps(row)}")
    if not args.keep:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    return row


def measure_archive(archive: Path, row: dict[str, Any], rounds: int, peak_disk: int = 0) -> None:
    """What the archive holds per URL, and how fast search, status and why answer over it."""
    fetched = fetched_count(archive)
    final = disk_bytes(archive)
    sizes = {
        "warc": disk_bytes(archive / "warc"),
        "index": disk_bytes(archive / "index") - disk_bytes_of(archive / "index", "spool"),
        "spool": disk_bytes_of(archive / "index", "spool"),
        "state": disk_bytes_of(archive, "state.sqlite"),
        "crawl_log": disk_bytes_of(archive, "crawl-log.jsonl"),
    }
    row.update(
        crawl_log_lines=fetched,
        final_mb=round(final / 1e6, 1),
        peak_disk_mb=round(max(peak_disk, final) / 1e6, 1),
        bytes_per_page={name: round(size / fetched) for name, size in sizes.items()},
    )
    row["search"] = search_latency(archive, queries(archive), rounds)
    url = last_fetched_url(archive)
    row["status_s"] = statistics.median(command_seconds(["status", str(archive)]) for _ in range(3))
    row["why_s"] = statistics.median(command_seconds(["why", str(archive), url]) for _ in range(3))
    row["load_at_end"] = load()


def fetched_count(archive: Path) -> int:
    """URLs fetched (every HTTP exchange the crawl log records as fetched: pages, requisites,
    redirects, 404s), the denominator of every per-URL figure."""
    with (archive / "crawl-log.jsonl").open("rb") as lines:
        return sum(1 for line in lines if b'"outcome": "fetched"' in line)


def disk_bytes_of(folder: Path, prefix: str) -> int:
    """Bytes of the files directly in `folder` whose names start with `prefix` (a SQLite file and
    its -wal and -shm companions)."""
    if not folder.exists():
        return 0
    return sum(
        p.stat().st_blocks * 512 for p in folder.iterdir() if p.name.startswith(prefix) and p.is_file()
    )


def cpu_per_url(row: dict[str, Any]) -> dict[str, float]:
    """CPU ms per URL of each column of `PROCESSES`, then `other`: every other process and what
    the samples missed."""
    urls = row["crawl_log_lines"]
    by_name = dict(row["cpu_s_by_process"])
    found = {column: 1000 * by_name.pop(name, 0.0) / urls for column, name in PROCESSES.items()}
    found["other"] = 1000 * (sum(by_name.values()) + row["cpu_unsampled_s"]) / urls
    return {column: round(ms, 3) for column, ms in found.items()}


def cpu_table(rows: list[dict[str, Any]]) -> str:
    columns = [*PROCESSES, "other"]
    lines = [
        "| pages | URLs | " + " | ".join(columns) + " | total | load |",
        "|" + "---:|" * (len(columns) + 3) + "---|",
    ]
    for row in rows:
        per = row["cpu_ms_per_url_by_process"]
        lines.append(
            f"| {row['pages']:,} | {row['crawl_log_lines']:,} | "
            + " | ".join(f"{per[column]:.2f}" for column in columns)
            + f" | {1000 * row['cpu_s'] / row['crawl_log_lines']:.2f} | {row['load_at_start']} |"
        )
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]
    lines = [
        "| pages | URLs | wall s | ms/URL | vs smallest | CPU ms/URL | peak RSS MB (largest process) "
        "| WARC B/URL | index B/URL | state B/URL | peak disk / final | search p50 / p95 ms "
        "| status s | why s | load |",
        "|" + "---:|" * 14 + "---|",
    ]
    for row in rows:
        per = 1000 * row["wall_s"] / row["crawl_log_lines"]
        base_per = 1000 * base["wall_s"] / base["crawl_log_lines"]
        sizes = row["bytes_per_page"]
        lines.append(
            f"| {row['pages']:,} | {row['crawl_log_lines']:,} | {row['wall_s']} | {per:.2f} | "
            f"{per / base_per:.2f}x | {1000 * row['cpu_s'] / row['crawl_log_lines']:.2f} | "
            f"{max(row['peak_rss_mb'].values())} | {sizes['warc']:,} | {sizes['index']:,} | "
            f"{sizes['state']:,} | {row['peak_disk_mb'] / row['final_mb']:.2f}x | "
            f"{row['search']['p50_ms']} / {row['search']['p95_ms']} | {row['status_s']} | "
            f"{row['why_s']} | {row['load_at_start']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench")
    parser.add_argument("--rounds", type=int, default=3, help="search rounds, each in a new process")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds allowed per crawl")
    parser.add_argument("--keep", action="store_true", help="keep the archives")
    parser.add_argument(
        "--archive", type=Path, help="only measure this archive (sizes, search, status, why): no crawl"
    )
    parser.add_argument("--output", type=Path, default=BENCH / "results" / "scale.json")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.archive:
        row: dict[str, Any] = {"pages": "-", "load_at_start": load()}
        measure_archive(args.archive, row, args.rounds)
        print(json.dumps(row, indent=2))
        return 0
    rows = [one_size(pages, args) for pages in args.sizes]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows))
    print()
    print("CPU ms per URL, by process:")
    print()
    print(cpu_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
