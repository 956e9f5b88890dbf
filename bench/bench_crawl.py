"""What one `archiver crawl` costs, configuration by configuration, on one generated site.

Generates (or reuses) a site, serves it with nginx (bench.server) and crawls it with archiver in
a fresh subprocess per run, in several configurations: links only, + WARC, + WARC + index (the
default); memory or SQLite frontier; the default asyncio loop or uvloop (when installed).
For each: pages, wall seconds of the process and of the crawl alone (report.json: up to the end
of the fetching, before plugins such as the index finish catching up), pages/s by both, CPU
seconds per 1,000 pages (the crawl and every process it waited for: the index writer), peak
RSS of the process tree, and the ratio of pages/s and CPU/page to a reference configuration
measured in the same run, so that a busy machine moves both alike.  On a shared machine, compare
two versions with `--against REV`: the runs of both alternate, so load changes hit both.

    python -m bench.bench_crawl                           # 2,000 pages, every configuration
    python -m bench.bench_crawl --pages 10000 --repeat 3  # medians of 3 runs per configuration
    python -m bench.bench_crawl --against HEAD~3 --repeat 3  # A/B, runs interleaved
    python -m bench.bench_crawl --configs links-memory,links-sqlite --profile /tmp/prof

`--profile DIR` also records each run with py-spy (raw folded stacks; `--idle` counts waiting
threads too) and prints the top functions by own and by inclusive samples, so a change can be
judged by where the time went.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import server as bench_server
from bench import sitegen
from bench.measure import run_measured
from bench.tools import crawl_command

PLUGINS = {
    "links": ("warc", "index", "sitemap"),
    "warc": ("index", "sitemap"),
    "full": ("sitemap",),
}


@dataclass(frozen=True)
class Setup:
    name: str
    plugins: str  # links | warc | full
    frontier: str  # memory | sqlite
    loop: str  # asyncio | uvloop


def all_setups() -> list[Setup]:
    setups = []
    for plugins in ("links", "warc", "full"):
        for frontier in ("memory", "sqlite"):
            for loop in ("asyncio", "uvloop"):
                suffix = "" if loop == "asyncio" else "-uvloop"
                setups.append(Setup(f"{plugins}-{frontier}{suffix}", plugins, frontier, loop))
    return setups


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def site_for(pages: int, seed: int, cache: Path) -> tuple[Path, dict[str, Any]]:
    out = cache / f"site-{pages}-{seed}"
    expected_file = out / "expected.json"
    if expected_file.exists():
        expected = json.loads(expected_file.read_text())
        if expected.get("format") == sitegen.FORMAT_VERSION:
            return out, expected
    expected = sitegen.generate(out, pages, seed)
    return out, expected


def command(setup: Setup, root: str, archive: Path, concurrency: int) -> list[str]:
    return crawl_command(root, archive, concurrency, setup.frontier, PLUGINS[setup.plugins])


def top_functions(raw: Path, limit: int = 15) -> dict[str, list[tuple[str, float]]]:
    """The hottest functions of a py-spy raw (folded) profile, by own and by inclusive samples."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        # "name (file.py:LINE)" -> "name (file.py)": one entry per function, not per line.
        frames = [
            frame.rsplit(":", 1)[0] + ")" if frame.endswith(")") else frame for frame in stack.split(";")
        ]
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
        total += n
    total = max(total, 1)
    return {
        "own": [(frame, n / total) for frame, n in own.most_common(limit)],
        "inclusive": [(frame, n / total) for frame, n in inclusive.most_common(limit + 10)],
    }


def source_of(rev: str, into: Path) -> Path:
    """A folder to put on PYTHONPATH so that `archiver` and `archiver_plugins` are those of `rev`.

    The editable install's finder comes after PYTHONPATH, so the child imports this copy.
    """
    repo = Path(__file__).resolve().parent.parent
    tree = into / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "archiver", "plugins"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    path = into / "path"
    path.mkdir()
    (path / "archiver").symlink_to(tree / "archiver")
    (path / "archiver_plugins").symlink_to(tree / "plugins")
    return path


def median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure is the median over the runs (the profile is the first run's)."""
    row = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            row[key] = statistics.median(run[key] for run in runs)
    return row


def run_one(
    setup: Setup,
    root: str,
    work: Path,
    concurrency: int,
    timeout: float,
    profile: Path | None,
    idle: bool = False,
    source: Path | None = None,
    label: str = "",
) -> dict[str, Any]:
    name = setup.name + label
    archive = work / f"{setup.name}-{time.monotonic_ns()}"
    cmd = command(setup, root, archive, concurrency)
    env = dict(os.environ)
    env["ARCHIVER_LOOP"] = setup.loop
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH", "")]))
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        raw = profile / f"{name}.txt"
        spy = ["py-spy", "record", "-f", "raw", "-r", "200", "-o", str(raw), *(["--idle"] if idle else [])]
        cmd = [*spy, "--", *cmd]
    measured = run_measured(
        cmd, timeout=timeout, stdout=work / "stdout.json", stderr=work / "stderr.txt", env=env
    )
    report: dict[str, Any] = {}
    text = (work / "stdout.json").read_text(errors="replace").strip()
    if "{" in text:
        # py-spy, when profiling, writes its own lines around the report.
        text = text[text.index("{") : text.rindex("}") + 1]
        try:
            report = json.loads(text)
        except json.JSONDecodeError:
            report = {}
    if measured.returncode != 0 or not report:
        stderr = (work / "stderr.txt").read_text(errors="replace")[-1500:]
        raise SystemExit(f"{name}: exit {measured.returncode}\n{stderr}")
    fetched = report["pages"] + report["failed"]
    row = {
        "config": name,
        "pages": fetched,
        "wall": measured.wall_seconds,
        "crawl_wall": report["wall_seconds"],
        "pages_per_s": fetched / measured.wall_seconds,
        "cpu_per_1000": measured.cpu_seconds / max(fetched, 1) * 1000,
        "cpu_share": measured.cpu_seconds / measured.wall_seconds,
        "peak_rss_mb": measured.peak_tree_rss_kb / 1024,
    }
    if profile is not None:
        row["top"] = top_functions(raw)
    shutil.rmtree(archive, ignore_errors=True)
    return row


def table(rows: list[dict[str, Any]], reference: str) -> str:
    ref = next((r for r in rows if r["config"] == reference), rows[0])
    lines = [
        f"{'config':<30} {'pages':>6} {'wall s':>7} {'crawl s':>7} {'pages/s':>8} {'crawl p/s':>9}"
        f" {'CPU s/1k':>9} {'CPU/wall':>8}"
        f" {'RSS MB':>7} {'speed vs ref':>12} {'CPU vs ref':>10}",
    ]
    for r in rows:
        lines.append(
            f"{r['config']:<30} {r['pages']:>6} {r['wall']:>7.2f} {r['crawl_wall']:>7.2f}"
            f" {r['pages_per_s']:>8.0f} {r['pages'] / r['crawl_wall']:>9.0f}"
            f" {r['cpu_per_1000']:>9.2f} {r['cpu_share']:>8.2f} {r['peak_rss_mb']:>7.0f}"
            f" {r['pages_per_s'] / ref['pages_per_s']:>11.2f}x"
            f" {r['cpu_per_1000'] / ref['cpu_per_1000']:>9.2f}x"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_crawl", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=2000, help="HTML pages of the site (default 2,000)")
    parser.add_argument("--seed", type=int, default=sitegen.DEFAULT_SEED)
    parser.add_argument("--concurrency", type=int, default=50, help="--max-tasks and per-host (default 50)")
    parser.add_argument("--configs", default="", help="comma-separated names (default: all)")
    parser.add_argument("--reference", default="links-memory", help="configuration the ratios compare to")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (medians are shown)")
    parser.add_argument(
        "--against", metavar="REV", help="also run the code of this git revision, interleaved, for A/B"
    )
    parser.add_argument("--slow", action="store_true", help="50 ms per response (bench.server --slow)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--profile", type=Path, help="record each run with py-spy into this folder")
    parser.add_argument("--idle", action="store_true", help="profile: count waiting threads too")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench", help="site cache"
    )
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)

    setups = all_setups()
    if not uvloop_available():
        print("[bench] uvloop not installed: its configurations are skipped", file=sys.stderr)
        setups = [s for s in setups if s.loop != "uvloop"]
    if args.configs:
        wanted = args.configs.split(",")
        unknown = set(wanted) - {s.name for s in all_setups()}
        if unknown:
            parser.error(f"unknown configuration(s): {', '.join(sorted(unknown))}")
        setups = [s for s in setups if s.name in wanted]
    if args.reference not in {s.name for s in setups}:
        args.reference = setups[0].name
    if args.against:
        args.reference += f"@{args.against}"

    site, expected = site_for(args.pages, args.seed, args.cache)
    print(f"[bench] site {site}: {expected['count']} URLs expected", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    with (
        bench_server.serving(site, slow=args.slow) as served,
        tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp,
    ):
        variants: list[tuple[str, Path | None]] = [("", None)]
        if args.against:
            variants.insert(0, (f"@{args.against}", source_of(args.against, Path(tmp) / "against")))
        for setup in setups:
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in variants}
            for attempt in range(args.repeat):
                for label, source in variants:
                    row = run_one(
                        setup,
                        served.url,
                        Path(tmp),
                        args.concurrency,
                        args.timeout,
                        args.profile,
                        args.idle,
                        source,
                        label,
                    )
                    runs[label].append(row)
                    print(
                        f"[bench] {row['config']} run {attempt + 1}: {row['pages']} pages,"
                        f" {row['pages_per_s']:.0f} pages/s, {row['cpu_per_1000']:.2f} CPU s/1k pages",
                        file=sys.stderr,
                    )
            rows += [median_row(runs[label]) for label, _ in variants]
    load = os.getloadavg()
    print(
        f"\n{args.pages} pages, concurrency {args.concurrency}{' (50 ms per response)' if args.slow else ''},"
        f" {os.cpu_count()} CPUs, load average {load[0]:.1f} at the end"
    )
    print(table(rows, args.reference))
    for row in rows:
        if "top" not in row:
            continue
        for how in ("own", "inclusive"):
            print(f"\n{row['config']}: top functions by {how} samples")
            for frame, share in row.get("top", {}).get(how, []):
                print(f"  {share:6.1%} {frame}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
