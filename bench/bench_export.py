"""Cost of `archiver export`: time and size of the mirror, zip and WACZ of the bench site.

    python -m bench.bench_export [--pages 2000] [--seed S] [--cache /tmp/archiver-bench]

Generates the bench site (bench.sitegen, cached), serves it with nginx (bench.server),
crawls it once with the links and warc plugins, then times:

* a first export to a folder (every file written),
* a second export to the same folder (incremental: nothing changed, nothing written),
* a second export after one file of the mirror was edited (one file written back),
* an export to a zip file, and a WACZ.

Prints a markdown table: seconds, files, pages per second, bytes of the output.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from archiver_plugins.mirror.export import ExportOptions, ExportResult, export_mirror

from archiver.config import load_config
from archiver.manager import make_plugin_manager
from archiver.runner import run_crawl
from bench import server
from bench.run import site_for


async def crawl(url: str, out: Path) -> tuple[int, float]:
    config = load_config(
        None,
        {
            "roots": (url,),
            "output": str(out),
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


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def timed(archive: Path, output: Path, fmt: str) -> tuple[ExportResult, float]:
    started = time.perf_counter()
    result = export_mirror(archive, output, ExportOptions(format=fmt))
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_export", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/archiver-bench"))
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    site_dir, expected = site_for(args.pages, args.seed, args.cache)
    work = Path(tempfile.mkdtemp(prefix="export-", dir=args.cache))
    rows: list[dict[str, Any]] = []
    try:
        with server.serving(site_dir) as live:
            fetched, seconds = asyncio.run(crawl(live.url, work / "archive"))
        archive = work / "archive"
        warc_bytes = sum(p.stat().st_size for p in (archive / "warc").iterdir())
        print(f"crawled {fetched} URLs in {seconds:.1f} s; WARC files {warc_bytes / 1e6:.1f} MB")

        mirror = work / "mirror"
        for label in ("folder, first export", "folder, again (nothing changed)"):
            result, spent = timed(archive, mirror, "dir")
            rows.append(_row(label, result, spent, folder_size(mirror)))
        edited = next(mirror.rglob("*.html"))
        edited.write_text("edited")
        result, spent = timed(archive, mirror, "dir")
        rows.append(_row("folder, again (one file edited)", result, spent, folder_size(mirror)))
        result, spent = timed(archive, work / "mirror.zip", "zip")
        rows.append(_row("zip", result, spent, (work / "mirror.zip").stat().st_size))
        result, spent = timed(archive, work / "archive.wacz", "wacz")
        rows.append(_row("wacz", result, spent, (work / "archive.wacz").stat().st_size))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nSite: {expected['html_pages']} pages, {expected['count']} URLs (seed {args.seed})\n")
    print("| export | seconds | files | written | files/s | output MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['label']} | {row['seconds']:.2f} | {row['files']} | {row['written']} |"
            f" {row['rate']:.0f} | {row['mb']:.1f} |"
        )
    return 0


def _row(label: str, result: ExportResult, seconds: float, size: int) -> dict[str, Any]:
    assert not result.errors, result.errors[:5]
    return {
        "label": label,
        "seconds": seconds,
        "files": result.files,
        "written": result.written,
        "rate": result.files / seconds if seconds else 0.0,
        "mb": size / 1e6,
    }


if __name__ == "__main__":
    raise SystemExit(main())
