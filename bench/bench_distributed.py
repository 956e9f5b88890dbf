"""Crawl rate with 1, 2 and 4 processes sharing a Redis frontier, and Redis round trips per page.

The site is bench.sitegen's (realistic pages: 5-20 KB, 20-50 links each), served by nginx
delaying every response by 50 ms (bench.server's slow mode); per-host concurrency is set
far above what the processes ask for, so only latency and CPU bind.  The first process
runs `archiver crawl` (it seeds the crawl), the others `archiver worker`; each writes
its own archive with the links and WARC plugins.

Figures: pages/s over the crawl itself (earliest start to latest finish in the
processes' reports, so interpreter start-up is left out) and over the whole run; Redis
round trips per page from the server's own `INFO commandstats` (reset before each run).

    python -m bench.bench_distributed [--pages 1500] [--processes 1 2 4] [--max-tasks 16] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import redis

from bench import server as nginx
from bench import sitegen

CLIENT_COMMANDS = {"evalsha", "eval", "script|load", "multi", "hgetall", "hello", "ping"}
"""Commands only clients send (each pipeline of the frontier holds exactly one of them)."""
PLUGINS = [
    "--plugin",
    "archiver_plugins.links",
    "--plugin",
    "archiver_plugins.warc",
    "--plugin",
    "archiver_plugins.redis",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed: apt-get install -y redis-server")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    client.close()
    return process, f"redis://127.0.0.1:{port}/0"


def write_config(path: Path, max_tasks: int) -> Path:
    path.write_text(
        f"[crawl]\nmax_tasks = {max_tasks}\nmax_tries = 2\n"
        "[politeness]\ndelay = 0.0\nrobots = false\nper_host_concurrency = 1000\n",
        encoding="utf-8",
    )
    return path


def commandstats(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def one_run(root: str, url: str, processes: int, max_tasks: int, work: Path) -> dict[str, Any]:
    crawl_id = f"bench-{processes}-{time.time_ns()}"
    config = write_config(work / f"crawl-{processes}.toml", max_tasks)
    client = redis.Redis.from_url(url, decode_responses=True)
    client.config_resetstat()
    env = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
    shared = ["--frontier", url, "--crawl-id", crawl_id, "-q"]
    archives = [work / f"run{processes}-{n}" for n in range(processes)]
    started = time.monotonic()
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "archiver",
            "crawl",
            root,
            "-o",
            str(archives[0]),
            "-c",
            str(config),
            *shared,
            *PLUGINS,
        ],
        env=env,
    )
    while not client.exists(f"archiver:{{{crawl_id}}}:config"):
        time.sleep(0.01)
    running = [first] + [
        subprocess.Popen(
            [sys.executable, "-m", "archiver", "worker", "-o", str(archive), *shared, *PLUGINS], env=env
        )
        for archive in archives[1:]
    ]
    codes = [p.wait() for p in running]
    wall = time.monotonic() - started
    calls = commandstats(client)
    counts = client.hgetall(f"archiver:{{{crawl_id}}}:counts")
    client.close()
    reports = [json.loads((a / "report.json").read_text()) for a in archives]
    begin = min(datetime.fromisoformat(r["started_at"]) for r in reports)
    end = max(datetime.fromisoformat(r["finished_at"]) for r in reports)
    crawl_seconds = (end - begin).total_seconds()
    pages = sum(r["pages"] for r in reports)
    # commandstats counts the commands run inside scripts too: a round trip is a command a
    # client sent (a script call, a pipeline, the connection's handshake).
    trips = {k: v for k, v in calls.items() if k in CLIENT_COMMANDS}
    total_calls = sum(trips.values())
    return {
        "processes": processes,
        "exit_codes": codes,
        "pages": pages,
        "done_in_redis": int(counts.get("done", 0)) + int(counts.get("failed", 0)),
        "pages_per_process": [r["pages"] for r in reports],
        "crawl_seconds": round(crawl_seconds, 2),
        "wall_seconds": round(wall, 2),
        "pages_per_second": round(pages / crawl_seconds, 1),
        "pages_per_second_wall": round(pages / wall, 1),
        "redis_round_trips": total_calls,
        "redis_round_trips_per_page": round(total_calls / max(pages, 1), 2),
        "redis_round_trips_by_command": dict(sorted(trips.items(), key=lambda kv: -kv[1])),
        "redis_commands_in_scripts_per_page": round(
            (sum(calls.values()) - total_calls - calls.get("info", 0)) / max(pages, 1), 1
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1500)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-tasks", type=int, default=16, help="Concurrent fetches per process.")
    parser.add_argument("--delay", type=float, default=0.05, help="Seconds nginx waits before each response.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    rows = []
    redis_process = None
    try:
        sitegen.generate(work / "site", pages=args.pages)
        redis_process, url = start_redis(work)
        with nginx.serving(work / "site", slow=True, delay=args.delay) as site:
            for processes in args.processes:
                row = one_run(site.url, url, processes, args.max_tasks, work)
                rows.append(row)
                if not args.json:
                    print(
                        f"{processes} process(es): {row['pages']} pages in {row['crawl_seconds']} s ="
                        f" {row['pages_per_second']} pages/s ({row['pages_per_second_wall']} with start-up);"
                        f" per process {row['pages_per_process']};"
                        f" Redis round trips per page {row['redis_round_trips_per_page']}"
                        f" {row['redis_round_trips_by_command']}",
                        flush=True,
                    )
    finally:
        if redis_process is not None:
            redis_process.terminate()
            redis_process.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "pages": args.pages,
        "delay": args.delay,
        "max_tasks": args.max_tasks,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
