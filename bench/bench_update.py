"""`archiver crawl --update` of an unchanged site against a full `--recrawl`, then with 5% changed.

The generated site (bench.sitegen, 10,000 pages by default) is copied to a work folder and
served by nginx (bench.server), which sends ETag and Last-Modified for every file and
answers conditional requests with 304.  In one run:

1. a full crawl into archive A (default plugins: links, WARC, index), copied to archive B;
2. `crawl --update A` of the unchanged site, and `crawl --recrawl` of B for reference:
   bytes received (body bytes from the report, plus the HTTP header blocks stored in the
   WARC records the run wrote), wall time of the command (the index catching up included)
   and of its crawl (the report's), peak RSS of the process tree;
3. 5% of the HTML pages changed on disk (a paragraph appended), then `crawl --update A`
   again: the response records it wrote are counted with warcio and must be exactly the
   changed pages.

    python -m bench.bench_update [--pages 10000] [--change 0.05] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from bench import server as bench_server
from bench import sitegen
from bench.bench_crawl import site_for
from bench.measure import run_measured
from bench.tools import crawl_command


def archiver(root: str, archive: Path, concurrency: int, *extra: str) -> list[str]:
    """The default plugins (sitemap aside, as in bench.run), at full speed, plus `extra`."""
    return [*crawl_command(root, archive, concurrency, "sqlite", ("sitemap",)), *extra]


def run(name: str, command: list[str], work: Path, archive: Path) -> dict[str, Any]:
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    measured = run_measured(command, timeout=3600, stdout=work / f"{name}.json", stderr=work / f"{name}.err")
    if measured.returncode != 0:
        raise SystemExit(f"{name}: exit {measured.returncode}\n{(work / f'{name}.err').read_text()[-2000:]}")
    report = json.loads((work / f"{name}.json").read_text())
    written = records_since(archive, started)
    headers = sum(r["head"] for r in written)
    return {
        "run": name,
        "pages": report["pages"],
        "body_bytes": report["bytes"],
        "header_bytes": headers,
        "received": report["bytes"] + headers,
        "wall": measured.wall_seconds,
        "crawl_wall": report["wall_seconds"],
        "peak_rss_mb": measured.peak_tree_rss_kb / 1024,
        "responses": sum(1 for r in written if r["type"] == "response"),
        "not_modified": sum(1 for r in written if r["type"] == "revisit" and r["status"] == 304),
        "same_payload": sum(1 for r in written if r["type"] == "revisit" and r["status"] != 304),
        "response_urls": {r["url"] for r in written if r["type"] == "response"},
    }


def records_since(archive: Path, started: str) -> list[dict[str, Any]]:
    """The response and revisit records written at or after `started` (a WARC date prefix)."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "revisit"):
                    continue
                if record.rec_headers.get_header("WARC-Date") < started:
                    continue
                http = record.http_headers
                found.append(
                    {
                        "type": record.rec_type,
                        "url": record.rec_headers.get_header("WARC-Target-URI"),
                        "status": int(http.get_statuscode()) if http else None,
                        "head": len(http.to_bytes()) if http else 0,
                    }
                )
    return found


def change_pages(docroot: Path, share: float, seed: int) -> set[str]:
    """Append a paragraph to `share` of the HTML pages; return their paths as URL paths."""
    pages = sorted(p for p in docroot.rglob("*.html"))
    chosen = random.Random(seed).sample(pages, round(len(pages) * share))
    for page in chosen:
        text = page.read_text(encoding="utf-8")
        page.write_text(text.replace("</body>", "<p>Changed since the last crawl.</p></body>"), "utf-8")
    paths = set()
    for page in chosen:
        relative = "/" + page.relative_to(docroot).as_posix()
        paths.add(relative[: -len("index.html")] if relative.endswith("/index.html") else relative)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_update", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=sitegen.DEFAULT_SEED)
    parser.add_argument("--change", type=float, default=0.05, help="share of pages changed (default 0.05)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench")
    args = parser.parse_args(argv)

    cached, _expected = site_for(args.pages, args.seed, args.cache)
    with tempfile.TemporaryDirectory(prefix="bench-update-") as tmp:
        work = Path(tmp)
        site = work / "site-copy"
        shutil.copytree(cached, site)
        with bench_server.serving(site) as served:
            a, b = work / "A", work / "B"
            c = args.concurrency
            full = run("full crawl", archiver(served.url, a, c), work, a)
            shutil.copytree(a, b)
            update = run("update, unchanged", archiver(served.url, a, c, "--update"), work, a)
            recrawl = run("recrawl", archiver(served.url, b, c, "--recrawl"), work, b)
        time.sleep(1.1)  # a changed file gets a later mtime, hence another ETag and Last-Modified
        changed = change_pages(site / "site", args.change, args.seed)
        # a new nginx on the same port: the old one's open_file_cache keeps a file's mtime for 60 s
        with bench_server.serving(site, port=served.port) as served:
            changed_run = run(
                f"update, {args.change:.0%} changed", archiver(served.url, a, c, "--update"), work, a
            )
        load = os.getloadavg()

    rows = [full, recrawl, update, changed_run]
    head = f"{'run':<22} {'pages':>6} {'received MB':>12} {'wall s':>7} {'crawl s':>7} {'RSS MB':>7}"
    print(f"{head} {'resp':>6} {'304':>6} {'same':>5}")
    for row in rows:
        print(
            f"{row['run']:<22} {row['pages']:>6} {row['received'] / 1e6:>12.2f} {row['wall']:>7.1f}"
            f" {row['crawl_wall']:>7.1f}"
            f" {row['peak_rss_mb']:>7.0f} {row['responses']:>6} {row['not_modified']:>6}"
            f" {row['same_payload']:>5}"
        )
    paths = {urlsplit(url).path for url in changed_run["response_urls"]}
    exact = paths == changed
    if not exact:
        print(f"written, not changed: {sorted(paths - changed)[:5]}")
        print(f"changed, not written: {sorted(changed - paths)[:5]}")
    print(
        f"\nupdate / full crawl body bytes: {update['received'] / full['body_bytes']:.2%} received"
        f" (target <= 5%); update / recrawl wall: {update['wall'] / recrawl['wall']:.2f}x (target <= 0.3x)"
    )
    print(
        f"{len(changed)} pages changed on disk; the update wrote {changed_run['responses']} response records;"
        f" the same URLs: {exact}"
    )
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
