"""How long `archiver` takes to start: `--help`, `plugins`, `status` and a search of a small archive.

Every command pays for what the command line imports before it runs, and `archiver search`
must answer in well under a second, so start-up is on its path.  This crawls a small
generated site (served by `python -m http.server` on 127.0.0.1) into a temporary archive,
then runs each command `--repeat` times as a fresh process and prints the median and the
best wall time and the median CPU time (user + system) of each.  With `--against REV` the
commands of that git revision run too, interleaved with the work tree's, so a change in
the machine's load hits both alike; `--against-venv DIR` runs the `archiver` of another
installation (its own entry points, for a revision whose plugins differ).  Compiled
bytecode is cached (in a temporary PYTHONPYCACHEPREFIX, after one untimed run) as it is
in an installed package, even where PYTHONDONTWRITEBYTECODE is set; `--no-bytecode-cache`
compiles every module on every run.

    python -m bench.bench_startup                     # 200 pages, 10 runs per command
    python -m bench.bench_startup --against HEAD~3    # A/B against an older revision
    python -m bench.bench_startup --against-venv /tmp/old/.venv   # A/B against another install
    python -X importtime -m archiver --help 2> imp.txt   # where the time goes, per module
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench import sitegen
from bench.bench_crawl import site_for, source_of


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(root: Path) -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "-d", str(root), "-b", "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("http.server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait()


def archiver_script() -> list[str]:
    """The console script users run (not a pyenv shim, whose own start-up is not ours)."""
    script = Path(sys.executable).parent / "archiver"
    if script.exists():
        return [str(script)]
    found = shutil.which("archiver")
    return [found] if found else [sys.executable, "-m", "archiver"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run; a failing command stops the benchmark."""
    start = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode not in (0, 1):  # search: 1 is "no match"
        raise RuntimeError(f"{' '.join(cmd)} exited {process.returncode}: {errors.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_startup", description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="HTML pages of the site (default 200)")
    parser.add_argument("--repeat", type=int, default=10, help="runs per command (default 10)")
    parser.add_argument("--query", default="telescope", help="the search (default: telescope)")
    parser.add_argument("--against", metavar="REV", help="also run this git revision, interleaved")
    parser.add_argument(
        "--against-venv",
        type=Path,
        metavar="DIR",
        help="also run DIR/bin/archiver (another install), interleaved",
    )
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="compile every module on every run (no .pyc)"
    )
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench", help="site cache"
    )
    args = parser.parse_args(argv)

    script = archiver_script()
    site, _ = site_for(args.pages, sitegen.DEFAULT_SEED, args.cache)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        archive = Path(tmp) / "a.archive"
        with http_server(site / "site") as url:
            subprocess.run(
                [*script, "crawl", url, "-o", str(archive), "--delay", "0", "-q"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "archiver --help": ["--help"],
            "archiver search --help": ["search", "--help"],
            "archiver plugins": ["plugins"],
            "archiver status ARCHIVE": ["status", str(archive)],
            f"archiver search ARCHIVE {args.query}": ["search", str(archive), args.query],
        }
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if args.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        variants: list[tuple[str, list[str], dict[str, str]]] = [("work tree", script, env)]
        if args.against:
            path = source_of(args.against, Path(tmp) / "against")
            variants.insert(0, (args.against, script, {**env, "PYTHONPATH": str(path)}))
        if args.against_venv:
            other = [str(args.against_venv / "bin" / "archiver")]
            variants.insert(0, (args.against_venv.parent.name[:12], other, env))

        def command(cmd: list[str], program: list[str]) -> list[str]:
            return cmd if cmd[0] == sys.executable else [*program, *cmd]

        for cmd in commands.values():  # writes the bytecode cache; not timed
            for _, program, variant_env in variants:
                timed(command(cmd, program), variant_env)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                for label, program, variant_env in variants:
                    runs.setdefault((name, label), []).append(timed(command(cmd, program), variant_env))
    load = os.getloadavg()[0]
    bytecode = "compiled on every run" if args.no_bytecode_cache else "cached"
    print(
        f"{args.pages}-page archive, {args.repeat} runs each, bytecode {bytecode}, {os.cpu_count()} CPUs,"
        f" load average {load:.1f} at the end; seconds\n"
    )
    print(f"| {'command':<34} | {'code':<12} | wall median | wall best | CPU median |")
    print(f"|{'-' * 36}|{'-' * 14}|-------------|-----------|------------|")
    for (name, label), samples in runs.items():
        walls = [wall for wall, _ in samples]
        cpus = [cpu for _, cpu in samples]
        print(
            f"| {name:<34} | {label:<12} | {statistics.median(walls):>11.3f} | {min(walls):>9.3f}"
            f" | {statistics.median(cpus):>10.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
