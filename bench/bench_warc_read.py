"""Cost of reading a WARC file back: the record reader, `warc check` and the export's tail check.

    python -m bench.bench_warc_read [--pages 20000] [--rounds 3] [--against REV]

Writes one gzip-per-record WARC file of `--pages` bench pages (request and response
records, as a crawl stores them, plus one 8 MB and one 3 MB incompressible body so that
members span many read chunks), then times `iter_members`, `verify_file` and
`check_tail` over the whole file, each in a fresh child that reports its own CPU time
and peak RSS.  With ``--against REV`` the code of git revision REV runs too, round by
round just before the current code, so both see the same load.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import sitegen
from bench.measure import child_figures
from bench.measure import medians as median_of

_READERS = ("iter_members", "verify_file", "check_tail")


def write_warc(path: Path, pages: int) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    site = sitegen.build(pages)
    noise = random.Random(7)
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for i in range(pages):
            body = sitegen.render_page(site, i).encode()
            if i in (pages // 3, 2 * pages // 3):
                body = noise.randbytes(8_000_000 if i == pages // 3 else 3_000_000)
            url = f"http://127.0.0.1:8080/p/{i}.html"
            request = writer.create_warc_record(
                url,
                "request",
                payload=io.BytesIO(f"GET /p/{i}.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".encode()),
            )
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            response = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
            )
            writer.write_record(request)
            writer.write_record(response)


def child(path: Path, reader: str) -> dict[str, float]:
    """Run one reader over `path` in this process; its CPU, wall time and peak RSS."""
    from archiver_plugins.archive_reader.members import iter_members
    from archiver_plugins.mirror.tail import check_tail
    from archiver_plugins.warc.verify import verify_file

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    if reader == "iter_members":
        with path.open("rb") as handle:
            count = sum(1 for member in iter_members(handle) if member.problem is None)
    elif reader == "verify_file":
        report = verify_file(path)
        assert report.ok, report.faults[:3]
        count = report.records
    else:
        tail = check_tail(path, [])
        assert not tail.damaged, tail.problem
        count = 0
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "user_s": after.ru_utime - before.ru_utime,
        "sys_s": after.ru_stime - before.ru_stime,
        "wall_s": wall,
        "peak_rss_mb": after.ru_maxrss / 1024,
        "records": count,
    }


def compare(pages: int, rounds: int, against: str | None) -> None:
    from .bench_crawl import source_of

    work = Path(tempfile.mkdtemp(prefix="bench-warc-read-"))
    try:
        warc = work / "bench.warc.gz"
        write_warc(warc, pages)
        variants: list[tuple[str, str]] = []
        if against:
            variants.append((f"@{against}", str(source_of(against, work / "against"))))
        variants.append(("current", ""))
        root = str(Path(__file__).resolve().parent.parent)
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        loads = []
        for _ in range(rounds):
            for reader in _READERS:
                for name, path in variants:
                    loads.append(os.getloadavg()[0])
                    args = ["--child", str(warc), reader]
                    figures = child_figures("bench.bench_warc_read", args, path, root)
                    results.setdefault((reader, name), []).append(figures)
        size = warc.stat().st_size
        print(f"{size / 1e6:.0f} MB WARC file, {2 * pages} records, {rounds} rounds, "
              f"load average {min(loads):.2f}-{max(loads):.2f}; medians:")  # fmt: skip
        print("| reader | code | user+sys s | wall s | MB/s of CPU | peak RSS MB |")
        print("|---|---|---:|---:|---:|---:|")
        medians = {key: median_of(runs) for key, runs in results.items()}
        for (reader, name), m in medians.items():
            cpu = m["user_s"] + m["sys_s"]
            print(
                f"| {reader} | {name} | {m['user_s']:.2f}+{m['sys_s']:.2f} | {m['wall_s']:.2f} "
                f"| {size / 1e6 / cpu:.0f} | {m['peak_rss_mb']:.0f} |"
            )
        if against:
            for reader in _READERS:
                old, new = medians[(reader, f"@{against}")], medians[(reader, "current")]
                ratio = (new["user_s"] + new["sys_s"]) / (old["user_s"] + old["sys_s"])
                print(f"{reader} CPU: {ratio:.2f}x of {against}'s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="also the code of revision REV, interleaved")
    parser.add_argument("--child", nargs=2, metavar=("WARC", "READER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1])))
        return 0
    compare(args.pages, args.rounds, args.against)
    return 0


if __name__ == "__main__":
    sys.exit(main())
