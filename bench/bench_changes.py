"""Memory and time of `archiver changes` as an archive grows: peak RSS should not follow the URL count.

Builds synthetic archives of two crawls of N URLs each (CDXJ index files only, beside empty
WARC files, and a `crawls.jsonl`): in the second crawl 5% of the URLs changed, 2% were
removed, 2% are new, the rest are identical-payload revisits.  Then runs
`archiver changes ARCHIVE --json` as a fresh process for each N and prints its wall time
and peak resident memory (the child's ru_maxrss), with the same for `--help` as the floor.

    python -m bench.bench_changes                    # 10,000 and 100,000 URLs
    python -m bench.bench_changes --urls 1000 300000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from archiver_plugins.archive_reader.capture import Capture

START = datetime(2026, 1, 1, tzinfo=UTC)


def build(folder: Path, urls: int) -> Path:
    archive = folder / f"a{urls}"
    (archive / "warc").mkdir(parents=True)
    (archive / "crawl.toml").write_text("")
    second = START + timedelta(days=7)
    events = [
        {"event": "start", "crawl": 1, "mode": "crawl", "at": START.isoformat()},
        {"event": "finish", "crawl": 1, "at": (START + timedelta(hours=1)).isoformat(), "complete": True},
        {"event": "start", "crawl": 2, "mode": "update", "at": second.isoformat()},
        {"event": "finish", "crawl": 2, "at": (second + timedelta(hours=1)).isoformat(), "complete": True},
    ]
    (archive / "crawls.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    for number, moment in ((1, START), (2, second)):
        stamp = (moment + timedelta(minutes=1)).strftime("%Y%m%d%H%M%S")
        name = f"crawl{number}.warc.gz"
        (archive / "warc" / name).write_bytes(b"")
        lines = []
        for i in range(urls + urls // 50):
            new = i >= urls
            if (number == 1 and new) or (number == 2 and i % 50 == 1):
                continue  # new pages only in crawl 2; 2% gone from crawl 2
            changed = number == 2 and i % 20 == 0
            revisit = number == 2 and not changed and not new
            capture = Capture(
                url=f"https://site.example/section/{i % 97}/page-{i:07d}.html",
                timestamp=stamp,
                status=200,
                mime="warc/revisit" if revisit else "text/html",
                digest=f"sha1:{'B' if changed else 'A'}{i:031d}",
                length=2000,
                offset=i * 2000,
                filename=name,
            )
            lines.append(capture.to_cdxj() + "\n")
        lines.sort()
        (archive / "warc" / f"crawl{number}.cdxj").write_text("".join(lines))
    return archive


def run(args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of `archiver ARGS` in a fresh process."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "archiver", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, nargs="+", default=[10_000, 100_000])
    options = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    wall, rss = run(["--help"])
    print(f"{'--help':>22}: {wall:6.2f} s, peak RSS {rss / 1024:6.1f} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        for urls in options.urls:
            archive = build(Path(tmp), urls)
            wall, rss = run(["changes", str(archive), "--json"])
            counts = json.loads(
                subprocess.run(
                    [sys.executable, "-m", "archiver", "changes", str(archive), "--json"],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )["counts"]
            label = f"changes, {urls:,} URLs"
            print(f"{label:>22}: {wall:6.2f} s, peak RSS {rss / 1024:6.1f} MiB  {counts}")


if __name__ == "__main__":
    main()
