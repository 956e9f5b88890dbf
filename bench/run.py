"""One command for the whole benchmark: archiver against wget and Scrapy on a generated site.

    python -m bench.run                      # 10,000 pages, nginx on loopback, concurrency 100
    python -m bench.run --quick              # 2,000 pages
    python -m bench.run --slow               # 50 ms per response (2,000 pages unless --pages)
    python -m bench.run --tools archiver-links --quick

Steps: generate the site (cached by size and seed), start nginx, measure what nginx serves per
second (wrk), time the per-page work nobody can skip (selectolax links, gzip of a WARC record),
then run each crawler in a fresh child and measure it. Prints a markdown table and writes
bench/results/latest.json (latest-2000.json for --quick, latest-slow-2000.json for --slow).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from w3lib.url import canonicalize_url

from . import costs, server, sitegen, tools
from .measure import Measured, run_measured

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
REFERENCE = "archiver"
DEFAULT_TOOLS = (
    "archiver-links",
    "archiver-warc",
    "archiver",
    "wget",
    "wget-warc",
    "scrapy",
    "floor",
    "floor-links",
)
SLOW_TOOLS = ("archiver-links", "archiver-warc", "archiver", "wget", "scrapy", "floor")
# wget exits 8 when the server answered an error (the site's 404s are on purpose).
OK_CODES = {"wget": {0, 8}}


def site_for(pages: int, seed: int, cache: Path) -> tuple[Path, dict[str, Any]]:
    """A generated site of this size and seed, reused when it was already written."""
    out = cache / f"site-{pages}-{seed}"
    expected_file = out / "expected.json"
    if expected_file.exists():
        expected = json.loads(expected_file.read_text())
        if expected.get("format") == sitegen.FORMAT_VERSION:
            return out, expected
    started = time.perf_counter()
    expected = sitegen.generate(out, pages, seed)
    log(f"generated {pages} pages ({expected['count']} URLs) in {time.perf_counter() - started:.1f} s")
    return out, expected


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def wrk_rate(url: str, connections: int, seconds: int = 5) -> dict[str, Any]:
    """Requests per second nginx serves one typical page at, measured by wrk (or ab)."""
    server.ensure_packages("wrk", packages=("wrk",))
    done = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    )
    match = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    latency = re.search(r"Latency\s+(\S+)", done.stdout)
    return {
        "tool": "wrk -t1",
        "connections": connections,
        "url": url,
        "requests_per_second": float(match.group(1)) if match else None,
        "latency_avg": latency.group(1) if latency else None,
    }


def canonical(url: str, origin: str) -> str:
    """Canonical form (w3lib, as archiver's and Scrapy's seen sets), relative to the site."""
    url = canonicalize_url(url)
    return url[len(origin) :] if url.startswith(origin) else url


def compare(urls: dict[str, int | None], expected: dict[str, Any], origin: str) -> dict[str, Any]:
    """How a fetched set differs from what the site holds, after canonicalization.

    A status other than the site's (a page answered 404, a 301 answered 404) is counted apart:
    it is the server failing, and the URLs only such pages link to then show up as missing.
    """
    got_status = {canonical(u, origin): status for u, status in urls.items()}
    got = set(got_status)
    want_status = {canonical(origin + u, origin): v["status"] for u, v in expected["urls"].items()}
    want = set(want_status)
    missing = sorted(want - got)
    extra = sorted(got - want)
    wrong = sorted(
        f"{u} {want_status[u]} -> {got_status[u]}"
        for u in got & want
        if got_status[u] is not None and got_status[u] != want_status[u]
    )
    css_only = set(expected["css_only"])
    srcset = {u for u in want if "@2x." in u}
    return {
        "fetched": len(got),
        "expected": len(want),
        "missing": len(missing),
        "extra": len(extra),
        "missing_css_only": len([u for u in missing if u in css_only]),
        "missing_srcset": len([u for u in missing if u in srcset]),
        "missing_examples": missing[:10],
        "extra_examples": extra[:10],
        "wrong_status": len(wrong),
        "wrong_status_examples": wrong[:10],
    }


def compare_sets(a: dict[str, int | None], b: dict[str, int | None], origin: str) -> dict[str, Any]:
    """Archiver's URL set against wget's: equal once canonicalized, or what differs.

    wget does not canonicalize, so it fetches `?a=1&b=2` and `?b=2&a=1` both; archiver (like
    Scrapy) fetches one. Those are counted apart, not as differences.
    """
    ca = {canonical(u, origin) for u in a}
    cb = {canonical(u, origin) for u in b}
    raw_a = {u.split("#")[0] for u in a}
    same_once_canonical = sorted(u for u in b if u not in raw_a and canonical(u, origin) in ca)
    return {
        "equal_canonical": ca == cb,
        "only_first": sorted(ca - cb)[:20],
        "only_second": sorted(cb - ca)[:20],
        "only_first_count": len(ca - cb),
        "only_second_count": len(cb - ca),
        "second_extra_same_once_canonical": len(same_once_canonical),
        "second_extra_examples": [u[len(origin) :] for u in same_once_canonical[:3]],
    }


@dataclass(frozen=True)
class Variant:
    """One archiver run beside the plain one: another revision's code, or a number of index
    processes (written to ``[plugins.index] processes`` in a config file given with ``-c``)."""

    revision: str = ""
    source: Path | None = None
    index_processes: int | None = None

    @property
    def suffix(self) -> str:
        parts = []
        if self.revision:
            parts.append(f"@{self.revision}")
        if self.index_processes is not None:
            plural = "es" if self.index_processes != 1 else ""
            parts.append(f"{self.index_processes} index process{plural}")
        return ", ".join(parts)

    @property
    def folder(self) -> str:
        name = re.sub(r"[^A-Za-z0-9]+", "-", self.revision)
        return (f"-at-{name}" if name else "") + (
            f"-p{self.index_processes}" if self.index_processes is not None else ""
        )


PLAIN = Variant()


def index_processes_supported(count: int) -> bool:
    """Whether this build's index plugin knows ``[plugins.index] processes``."""
    probe = (
        "import sys; from archiver_plugins.index import parse_options; "
        "parse_options({'processes': int(sys.argv[1])})"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(count)], capture_output=True, text=True)
    return done.returncode == 0


def run_tool(
    tool: tools.Tool,
    root: str,
    workdir: Path,
    concurrency: int,
    urls_file: Path,
    timeout: float,
    nginx: server.Server,
    frontier: str,
    loop: str = "auto",
    variant: Variant = PLAIN,
) -> dict[str, Any]:
    out = workdir / (tool.name + variant.folder)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if tool.family == "archiver":
        command = tools.archiver_command(tool, root, out, concurrency, frontier)
        if variant.index_processes is not None:
            config = out / "index-processes.toml"
            config.write_text(f"[plugins.index]\nprocesses = {variant.index_processes}\n")
            command += ["-c", str(config)]
    else:
        command = tools.command(tool, root, out, concurrency, urls_file)
    path = [str(variant.source)] if variant.source is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(BENCH.parent)])}
    if loop != "auto":
        env["ARCHIVER_LOOP"] = loop
    log(f"{tool.name}: {' '.join(command)}")
    server_cpu = nginx.cpu_seconds()
    server_log_start = len(nginx.error_log())
    measured = run_measured(
        command,
        timeout=timeout,
        stdout=out / "stdout",
        stderr=out / "stderr",
        cwd=BENCH.parent,
        env=env,
    )
    server_cpu = nginx.cpu_seconds() - server_cpu
    server_errors = server_error_lines(nginx.error_log()[server_log_start:])
    if server_errors:
        log(f"{tool.name}: nginx logged {len(server_errors)} errors, first: {server_errors[0]}")
    stdout = (out / "stdout").read_text(errors="replace")
    stderr = (out / "stderr").read_text(errors="replace")
    if (
        tool.family == "archiver"
        and frontier == "sqlite"
        and measured.returncode == 2
        and "not available" in stderr
    ):
        log(f"{tool.name}: sqlite frontier not available in this build, using memory")
        return run_tool(tool, root, workdir, concurrency, urls_file, timeout, nginx, "memory", loop, variant)
    result: dict[str, Any] = {}
    if tool.family in ("archiver", "floor") and stdout.strip():
        try:
            result = json.loads(stdout)
        except json.JSONDecodeError:
            result = {}
    urls, requests = tools.fetched_urls(tool, out, result)
    ok = measured.returncode in OK_CODES.get(tool.family, {0}) and not measured.timed_out
    row = row_for(tool, measured, urls, requests, result)
    row["variant"] = variant.revision
    row["index_processes"] = variant.index_processes
    if variant.suffix:
        row["label"] = f"{tool.label}, {variant.suffix}"
    if tool.family == "archiver" and result.get("wall_seconds") is not None:
        # The crawl's own end (last page recorded); the rest of the process's wall time is start-up
        # and plugins finishing (the index catching up with the pages the crawl handed it).
        row["crawl_seconds"] = round(float(result["wall_seconds"]), 2)
        row["catch_up_seconds"] = round(row["wall_seconds"] - row["crawl_seconds"], 2)
    row.update(
        command=command,
        ok=ok,
        server_cpu_seconds=round(server_cpu, 2),
        server_errors=len(server_errors),
        server_error_examples=server_errors[:5],
        frontier=frontier if tool.family == "archiver" else None,
        event_loop=event_loop(loop) if tool.family == "archiver" else None,
        stderr_tail=stderr[-1500:] if not ok else "",
        report=result if tool.family == "archiver" else None,
        _urls=urls,
    )
    log(
        f"{tool.name}{variant.folder}: {row['pages']} pages in {row['wall_seconds']:.1f} s "
        f"({row['pages_per_second']:.0f}/s), exit {measured.returncode}"
    )
    return row


def server_error_lines(text: str) -> list[str]:
    """nginx's error-log lines at `crit` or worse: a server failing (EMFILE, ...), not a crawler."""
    return [line for line in text.splitlines() if re.search(r"\[(crit|alert|emerg)\]", line)]


def event_loop(loop: str) -> str:
    """The loop archiver runs on: uvloop when installed, unless ARCHIVER_LOOP says otherwise."""
    if loop != "auto":
        return loop
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def row_for(
    tool: tools.Tool,
    measured: Measured,
    urls: dict[str, int | None],
    requests: int,
    result: dict[str, Any],
) -> dict[str, Any]:
    pages = len(urls) if urls else int(result.get("pages", 0))
    wall = measured.wall_seconds
    return {
        "tool": tool.name,
        "label": tool.label,
        "pages": pages,
        "requests": requests,
        "wall_seconds": round(wall, 2),
        "pages_per_second": round(pages / wall, 1) if wall else 0.0,
        "cpu_seconds": round(measured.cpu_seconds, 2),
        "cpu_seconds_per_1000_pages": round(measured.cpu_seconds / pages * 1000, 2) if pages else None,
        "cpu_percent": round(100 * measured.cpu_seconds / wall) if wall else None,
        "peak_rss_mb": round(measured.peak_tree_rss_kb / 1024, 1),
        "max_process_rss_mb": round(measured.maxrss_kb / 1024, 1),
        "process_peak_rss_mb": {name: round(kb / 1024, 1) for name, kb in measured.process_peaks_kb.items()},
        "returncode": measured.returncode,
        "timed_out": measured.timed_out,
    }


def machine() -> dict[str, Any]:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(memory, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def markdown_table(rows: list[dict[str, Any]]) -> str:
    reference = next((r for r in rows if r["tool"] == REFERENCE and r["ok"] and not r.get("variant")), None)
    lines = [
        "| crawler | pages | wall s | crawl s | pages/s | CPU s / 1k pages | peak RSS MB "
        "| speed vs archiver | URL set vs expected |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = ""
        if reference and row["pages_per_second"]:
            ratio = f"{row['pages_per_second'] / reference['pages_per_second']:.2f}x"
        check = row.get("check") or {}
        if not row["ok"]:
            urls = "FAILED" + (" (timeout)" if row["timed_out"] else f" (exit {row['returncode']})")
        elif not check:
            urls = "n/a (fixed list)"
        elif check["missing"] == 0 and check["extra"] == 0 and not check.get("wrong_status"):
            urls = "= expected"
        else:
            parts = []
            if check["missing"]:
                why = []
                if check["missing_srcset"]:
                    why.append(f"{check['missing_srcset']} srcset")
                if check["missing_css_only"]:
                    why.append(f"{check['missing_css_only']} in CSS")
                parts.append(f"-{check['missing']}" + (f" ({', '.join(why)})" if why else ""))
            if check["extra"]:
                parts.append(f"+{check['extra']}")
            if check.get("wrong_status"):
                parts.append(f"{check['wrong_status']} with another status")
            urls = " ".join(parts)
        cpu = row["cpu_seconds_per_1000_pages"]
        lines.append(
            f"| {row['label']} | {row['pages']:,} | {row['wall_seconds']:.1f} | "
            f"{row.get('crawl_seconds') or '-'} | {row['pages_per_second']:,.0f} | "
            f"{cpu if cpu is not None else '-'} | "
            f"{row['peak_rss_mb']:.0f} | {ratio} | {urls} |"
        )
    return "\n".join(lines)


STAGES = {
    "archiver-links": "links only",
    "archiver-warc": "links + WARC",
    "archiver": "links + WARC + index (default)",
    "wget-warc": "wget --mirror --warc-file",
}


def short_name(process: str) -> str:
    return process.removeprefix("archiver_plugins.").removesuffix(".worker").removesuffix(".writer")


def stages_table(rows: list[dict[str, Any]]) -> str:
    """Each stage of the pipeline against `wget --mirror --warc-file` of the same run: wall,
    CPU per page, the index's catch-up after the crawl and the peak RSS of every process."""
    wget = next((r for r in rows if r["tool"] == "wget-warc" and r["ok"]), None)
    lines = [
        "| stage | wall s | vs wget --mirror --warc-file | CPU ms / page | index catch-up s "
        "| peak RSS MB by process |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if row["tool"] not in STAGES:
            continue
        stage = STAGES[row["tool"]] + (f", {row_suffix(row)}" if row_suffix(row) else "")
        ratio = f"{row['wall_seconds'] / wget['wall_seconds']:.2f}x" if wget and row["ok"] else "-"
        cpu = row["cpu_seconds_per_1000_pages"]
        catch_up = row.get("catch_up_seconds") if row["tool"] == "archiver" else None
        peaks = ", ".join(f"{short_name(n)} {mb:.0f}" for n, mb in row.get("process_peak_rss_mb", {}).items())
        lines.append(
            f"| {stage} | {row['wall_seconds']:.1f} | {ratio} | {cpu if cpu is not None else '-'} | "
            f"{catch_up if catch_up is not None else '-'} | {peaks or '-'} |"
        )
    return "\n".join(lines)


def row_suffix(row: dict[str, Any]) -> str:
    parts = []
    if row.get("variant"):
        parts.append(f"@{row['variant']}")
    if row.get("index_processes") is not None:
        parts.append(f"{row['index_processes']} index proc.")
    return ", ".join(parts)


def catch_up_text(rows: list[dict[str, Any]], supported: bool | None, wanted: list[int]) -> str:
    """The index's catch-up after the crawl with 1 and N processes, or why it is not known."""
    if supported is None:
        return ""
    plain = [r for r in rows if r["tool"] == "archiver" and r["ok"] and not r.get("variant")]
    if not supported:
        default = f"{plain[0]['catch_up_seconds']:.1f} s with the plugin's default" if plain else "not run"
        return (
            f"index catch-up with {' and '.join(map(str, wanted))} processes: n/a (this build's index "
            f"plugin has no [plugins.index] processes setting); {default}"
        )
    measured = [(r["index_processes"], r["catch_up_seconds"]) for r in plain if r.get("index_processes")]
    if not measured:
        return "index catch-up: not measured"
    first = measured[0][1]
    parts = [
        f"{n} process{'es' if n != 1 else ''} {s:.1f} s"
        + (f" ({s / first:.2f}x)" if first and s != first else "")
        for n, s in measured
    ]
    return "index catch-up after the crawl (process wall - crawl wall): " + ", ".join(parts)


def limits_text(data: dict[str, Any]) -> str:
    wrk = data["nginx"]
    cost = data["per_page_costs"]
    lines = [
        f"nginx alone (wrk, {wrk['connections']} connections, one page): "
        f"{wrk['requests_per_second'] or 0:,.0f} requests/s, latency {wrk['latency_avg']}",
        f"per page, one core: links (decode + selectolax + urljoin/urldefrag, "
        f"{cost['links_per_page']:.0f} links, {cost['page_kb']:.1f} KB) {cost['links_us']:.0f} us "
        f"(urljoin+urldefrag {cost['urljoin_us']:.0f} us) = {cost['links_pages_per_s']:,.0f} pages/s; "
        f"gzip level 9 of the WARC record {cost['gzip_us']:.0f} us "
        f"(level 6: {cost['gzip6_us']:.0f} us) = {cost['gzip_pages_per_s']:,.0f} pages/s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--pages", type=int, help="HTML pages in the site (default 10,000; 2,000 with --quick or --slow)"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 pages")
    parser.add_argument("--slow", action="store_true", help="nginx delays every response by 50 ms")
    parser.add_argument("--delay", type=float, default=server.DEFAULT_DELAY, help="slow-mode delay")
    parser.add_argument("--concurrency", type=int, default=100, help="concurrent requests (100)")
    parser.add_argument("--tools", default="", help=f"comma list out of {','.join(tools.TOOLS)}")
    parser.add_argument("--seed", type=int, default=sitegen.DEFAULT_SEED)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "archiver-bench",
        help="where generated sites are kept between runs",
    )
    parser.add_argument("--keep", action="store_true", help="keep the crawlers' outputs")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per crawler")
    parser.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="event loop for archiver (ARCHIVER_LOOP; auto = uvloop when installed)",
    )
    parser.add_argument("--output", type=Path, help="results JSON (default bench/results/latest*.json)")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also run archiver's stages with the code of git revision REV, each before the current one",
    )
    parser.add_argument(
        "--index-processes",
        default=f"1,{os.cpu_count() or 1}",
        help="the default pipeline once per count of index processes ([plugins.index] processes; "
        "default 1 and the machine's cores); '' for the plugin's default only",
    )
    args = parser.parse_args(argv)

    pages = args.pages or (2_000 if args.quick or args.slow else 10_000)
    chosen = [t for t in args.tools.split(",") if t] or list(SLOW_TOOLS if args.slow else DEFAULT_TOOLS)
    unknown = [t for t in chosen if t not in tools.TOOLS]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; choose from {', '.join(tools.TOOLS)}")
    started = time.perf_counter()
    server.ensure_packages("/usr/bin/time", "wget", packages=("time", "wget"))
    args.cache.mkdir(parents=True, exist_ok=True)
    site_dir, expected = site_for(pages, args.seed, args.cache)
    workdir = Path(tempfile.mkdtemp(prefix="run-", dir=args.cache))
    data: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "site": {
            "pages": pages,
            "seed": args.seed,
            "urls": expected["count"],
            "urls_canonical": expected["count"] - len(expected["canonical_duplicates"]),
        },
        "event_loop": event_loop(args.loop),
        "mode": {"slow": args.slow, "delay": args.delay if args.slow else 0, "concurrency": args.concurrency},
        "versions": {},
    }
    try:
        with server.start(site_dir, slow=args.slow, delay=args.delay) as nginx:
            root = nginx.url
            origin = root.rstrip("/")
            data["versions"]["nginx"] = subprocess.run(
                ["nginx", "-v"], capture_output=True, text=True
            ).stderr.strip()
            sample = next(u for u, v in expected["urls"].items() if v["kind"] == "page" and u != "/")
            connections = args.concurrency if args.slow else 50
            data["nginx"] = wrk_rate(origin + sample, connections)
            idle = nginx.cpu_seconds()
            data["nginx"]["cpu_seconds_during_wrk"] = round(idle, 2)
            log(f"nginx: {data['nginx']['requests_per_second']} requests/s")
            data["per_page_costs"] = {k: round(v, 1) for k, v in costs.measure(nginx.docroot, origin).items()}
            urls_file = workdir / "urls.json"
            urls_file.write_text(json.dumps([origin + u for u in expected["urls"]]))
            against = None
            if args.against:
                from .bench_crawl import source_of

                against = Variant(args.against, source_of(args.against, workdir / "against"))
            counts = sorted({int(n) for n in args.index_processes.split(",") if n.strip()})
            supported = index_processes_supported(counts[0]) if counts and "archiver" in chosen else None
            data["index_processes"] = {"wanted": counts, "supported": supported}
            rows = []
            for name in chosen:
                tool = tools.TOOLS[name]
                data["versions"].setdefault(tool.family, tools.version(tool))
                variants = [PLAIN]
                if name == "archiver" and supported:
                    variants = [Variant(index_processes=n) for n in counts]
                if tool.family == "archiver" and against is not None:
                    variants.insert(0, against)
                for variant in variants:
                    row = run_tool(
                        tool,
                        root,
                        workdir,
                        args.concurrency,
                        urls_file,
                        args.timeout,
                        nginx,
                        "sqlite",
                        args.loop,
                        variant,
                    )
                    if tool.family != "floor":
                        row["check"] = compare(row["_urls"], expected, origin)
                    rows.append(row)
            by_name = {r["tool"]: r for r in rows if not r.get("variant")}
            checks = {}
            for name in ("archiver", "archiver-warc", "archiver-links"):
                if name in by_name and "wget" in by_name:
                    checks[f"{name} vs wget"] = compare_sets(
                        by_name[name]["_urls"], by_name["wget"]["_urls"], origin
                    )
                    break
            data["url_set_checks"] = checks
            for row in rows:
                row.pop("_urls")
            data["rows"] = rows
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    data["total_seconds"] = round(time.perf_counter() - started, 1)
    name = "latest" + ("-slow" if args.slow else "") + (f"-{pages}" if pages != 10_000 else "")
    output = args.output or RESULTS / f"{name}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(data, indent=1) + "\n")

    mode = f"{args.delay * 1000:.0f} ms per response" if args.slow else "no delay"
    print(
        f"## {pages:,}-page site ({expected['count']:,} URLs), nginx on loopback, {mode}, "
        f"concurrency {args.concurrency}"
    )
    print(
        f"{data['date']}, {data['machine']['cpus']} cores ({data['machine']['cpu_model']}), "
        f"load at start {data['machine']['load_average_at_start']}, "
        f"archiver on {data['event_loop']}\n"
    )
    print(markdown_table(data["rows"]))
    print("\nPer stage, against wget --mirror --warc-file of this run:\n")
    print(stages_table(data["rows"]))
    catch_up = catch_up_text(data["rows"], supported, counts)
    if catch_up:
        print(catch_up)
    print()
    print(limits_text(data))
    for name, check in data["url_set_checks"].items():
        same = "same canonical URL set" if check["equal_canonical"] else "DIFFERENT URL sets"
        print(
            f"{name}: {same} (only archiver: {check['only_first_count']} "
            f"{check['only_first'][:5]}, only wget: {check['only_second_count']} "
            f"{check['only_second'][:5]}); wget also fetched "
            f"{check['second_extra_same_once_canonical']} URLs equal to others once "
            f"canonicalized, e.g. {check['second_extra_examples'][:2]}"
        )
    print(f"\nresults: {output} (whole run {data['total_seconds']:.0f} s)")
    return 0 if all(r["ok"] for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
