"""Crawl rate with 1, 2, 4, ... processes sharing a Redis frontier, against one process on SQLite.

The site is bench.sitegen's (realistic pages: 5-20 KB, 20-50 links each), served by nginx,
delaying every response by `--delay` seconds (50 ms; 0 serves at full speed); per-host
concurrency is set far above what the processes ask for, so only latency and CPU bind.
The first process runs `archiver crawl` (it seeds the crawl), the others `archiver
worker`; each writes its own archive with the links and WARC plugins.  With `--sqlite`
one process on the SQLite frontier crawls the same site first, in the same run: the
reference of the per-URL cost of the shared frontier.

Figures: wall time and pages/s over the crawl itself (earliest start to latest finish in
the processes' reports, so interpreter start-up is left out) and over the whole run; the
efficiency of N processes (their rate over N times one process's); Redis's own CPU seconds
(`INFO cpu`); Redis round trips (commands clients sent) and all commands (those run by the
scripts included) per page, from the server's `INFO commandstats` (reset before each run).
Run it on a machine with more cores to see how far a shared crawl scales: each process is
one core's worth of Python.

    python -m bench.bench_distributed [--pages 1500] [--processes 1 2 4] [--max-tasks 16]
        [--delay 0.05] [--sqlite] [--json]
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


def redis_cpu(client: redis.Redis) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def sqlite_run(root: str, max_tasks: int, work: Path) -> dict[str, Any]:
    """One process on the SQLite frontier (the default), the same plugins and settings."""
    config = write_config(work / "crawl-sqlite.toml", max_tasks)
    archive = work / "run-sqlite"
    env = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
    started = time.monotonic()
    plugins = PLUGINS[:-2]  # no Redis
    args = [sys.executable, "-m", "archiver", "crawl", root, "-o", str(archive), "-c", str(config), "-q"]
    code = subprocess.run([*args, *plugins], env=env, check=False).returncode
    wall = time.monotonic() - started
    report = json.loads((archive / "report.json").read_text())
    seconds = (
        datetime.fromisoformat(report["finished_at"]) - datetime.fromisoformat(report["started_at"])
    ).total_seconds()
    pages = int(report["pages"])
    return {
        "frontier": "sqlite",
        "processes": 1,
        "exit_codes": [code],
        "pages": pages,
        "crawl_seconds": round(seconds, 2),
        "wall_seconds": round(wall, 2),
        "pages_per_second": round(pages / seconds, 1),
        "pages_per_second_wall": round(pages / wall, 1),
    }


def one_run(root: str, url: str, processes: int, max_tasks: int, work: Path) -> dict[str, Any]:
    crawl_id = f"bench-{processes}-{time.time_ns()}"
    config = write_config(work / f"crawl-{processes}.toml", max_tasks)
    client = redis.Redis.from_url(url, decode_responses=True)
    client.config_resetstat()
    cpu_before = redis_cpu(client)
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
    cpu = redis_cpu(client) - cpu_before
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
    all_commands = sum(calls.values()) - calls.get("info", 0) - calls.get("config|resetstat", 0)
    return {
        "frontier": "redis",
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
        "redis_commands_per_page": round(all_commands / max(pages, 1), 1),
        "redis_cpu_seconds": round(cpu, 2),
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
    parser.add_argument("--sqlite", action="store_true", help="First one process on the SQLite frontier.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    rows = []
    redis_process = None
    try:
        sitegen.generate(work / "site", pages=args.pages)
        redis_process, url = start_redis(work)
        with nginx.serving(work / "site", slow=args.delay > 0, delay=args.delay) as site:
            if args.sqlite:
                reference = sqlite_run(site.url, args.max_tasks, work)
                rows.append(reference)
                if not args.json:
                    print(
                        f"SQLite, 1 process: {reference['pages']} pages in {reference['crawl_seconds']} s"
                        f" (wall {reference['wall_seconds']} s) = {reference['pages_per_second']} pages/s",
                        flush=True,
                    )
            one_rate = None
            for processes in args.processes:
                row = one_run(site.url, url, processes, args.max_tasks, work)
                if processes == 1:
                    one_rate = row["pages_per_second"]
                if one_rate:
                    row["efficiency"] = round(row["pages_per_second"] / (processes * one_rate), 2)
                if args.sqlite and processes == 1:
                    row["seconds_vs_sqlite"] = round(row["crawl_seconds"] / rows[0]["crawl_seconds"], 2)
                rows.append(row)
                if not args.json:
                    ratio = row.get("seconds_vs_sqlite")
                    versus = f" ({ratio}x SQLite's time)" if ratio is not None else ""
                    print(
                        f"Redis, {processes} process(es): {row['pages']} pages in {row['crawl_seconds']} s"
                        f" (wall {row['wall_seconds']} s){versus} = {row['pages_per_second']} pages/s,"
                        f" efficiency {row.get('efficiency', 'n/a')}; per process {row['pages_per_process']};"
                        f" Redis CPU {row['redis_cpu_seconds']} s; per page: round trips"
                        f" {row['redis_round_trips_per_page']}, commands {row['redis_commands_per_page']}"
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
        "load_average_at_end": os.getloadavg(),
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
