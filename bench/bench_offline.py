"""Cost of the offline-reading exports: ZIM and EPUB against the folder and zip of the same archive.

    python -m bench.bench_offline [--pages 10000] [--seed S] [--cache /tmp/archiver-bench]
    python -m bench.bench_offline --docs DIR --root PATH   # a local documentation tree instead

Crawls the bench site (bench.sitegen, cached), or the HTML tree DIR served from /PATH/ with
the crawl kept under it, once with the links and warc plugins, served by nginx (bench.server).
Then each export runs as `archiver export ARCHIVE OUT --format F -q` in a fresh child
(bench.measure): wall time, CPU, peak RSS, the output's size.  The folder export is the
reference run of the same command: the table gives each format's time as a ratio to it and
each output's size as a ratio to the zip.  Targets (issue 45): ZIM and EPUB <= 2x the
folder's time, peak RSS <= 200 MB, the ZIM no larger than the zip.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from archiver.config import load_config
from archiver.manager import make_plugin_manager
from archiver.runner import run_crawl
from bench import server
from bench.bench_export import folder_size
from bench.measure import run_measured
from bench.run import site_for

FORMATS = ("dir", "zip", "zim", "epub")
TIMEOUT = 1800.0


async def crawl(root: str, out: Path) -> tuple[int, float]:
    """The links and warc plugins from `root`, kept to the URLs under it."""
    config = load_config(
        None,
        {
            "roots": (root,),
            "output": str(out),
            "include": (f"^{re.escape(root)}",),
            "delay": 0.0,
            "robots": False,
            "frontier": "memory",
            "max_tasks": 32,
            "per_host_concurrency": 32,
        },
    )
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links", "archiver_plugins.warc"])
    started = time.perf_counter()
    result = await run_crawl(config, pm)
    return result.stats["pages"], time.perf_counter() - started


def _export(archive: Path, output: Path, fmt: str, work: Path) -> dict[str, Any]:
    measured = run_measured(
        [sys.executable, "-m", "archiver", "export", str(archive), str(output), "--format", fmt, "-q"],
        timeout=TIMEOUT,
        stdout=work / f"{fmt}.out",
        stderr=work / f"{fmt}.err",
    )
    if measured.returncode != 0:
        errors = (work / f"{fmt}.err").read_text(errors="replace")[-2000:]
        raise SystemExit(f"export --format {fmt} failed ({measured.returncode}): {errors}")
    size = folder_size(output) if output.is_dir() else output.stat().st_size
    return {
        "format": fmt,
        "seconds": measured.wall_seconds,
        "cpu": measured.cpu_seconds,
        "rss_mb": measured.peak_tree_rss_kb / 1024,
        "bytes": size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_offline", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/archiver-bench"))
    parser.add_argument("--docs", type=Path, help="serve this folder instead of the bench site")
    parser.add_argument("--root", default="", help="with --docs: the path under it to crawl (e.g. book)")
    parser.add_argument("--keep", type=Path, help="copy the exported ZIM and EPUB into this folder")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.docs is not None:
        site_dir, label = args.docs, f"{args.docs}/{args.root}"
    else:
        site_dir, expected = site_for(args.pages, args.seed, args.cache)
        label = f"bench site: {expected['html_pages']} pages, {expected['count']} URLs (seed {args.seed})"
    work = Path(tempfile.mkdtemp(prefix="offline-", dir=args.cache))
    rows: list[dict[str, Any]] = []
    try:
        with server.serving(site_dir) as live:
            root = live.url.rstrip("/") + "/" + (args.root.strip("/") + "/" if args.root else "")
            fetched, seconds = asyncio.run(crawl(root, work / "archive"))
        archive = work / "archive"
        warc_bytes = sum(p.stat().st_size for p in (archive / "warc").iterdir())
        print(f"crawled {fetched} URLs in {seconds:.1f} s; WARC files {warc_bytes / 1e6:.1f} MB")
        for fmt in FORMATS:
            output = work / ("mirror" if fmt == "dir" else f"site.{fmt}")
            rows.append(_export(archive, output, fmt, work))
            if args.keep is not None and fmt in ("zim", "epub"):
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(output, args.keep / output.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    reference = rows[0]
    zipped = next(row for row in rows if row["format"] == "zip")
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"\n{label}; load average {load}\n")
    print("| export | seconds | x folder | CPU s | peak RSS MB | output MB | x zip |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['format']} | {row['seconds']:.1f} | {row['seconds'] / reference['seconds']:.2f} |"
            f" {row['cpu']:.1f} | {row['rss_mb']:.0f} | {row['bytes'] / 1e6:.1f} |"
            f" {row['bytes'] / zipped['bytes']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
