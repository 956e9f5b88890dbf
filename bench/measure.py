"""Run one command in a fresh child and measure what it cost: wall, CPU, peak memory.

CPU comes from the kernel's rusage of the child (wait4), which includes every descendant it
waited for (archiver's index and WARC writer processes). Memory is given three ways: `maxrss` is
the largest single process, `peak_tree_rss` the largest sum of RSS over the whole process tree,
sampled from /proc every 50 ms (what the machine had to hold), and `process_peaks` the largest
RSS of each process of the tree, by name (`archiver crawl`, `archiver_plugins.warc.worker`, ...).

Linux keeps a process's RSS high-water mark across exec, so the rusage of a child forked from
this (big) Python process would report our own RSS; the command is therefore started through
GNU time (`/usr/bin/time -f %M`, small), whose figure for its own child is the true one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Measured:
    returncode: int
    wall_seconds: float
    user_seconds: float
    system_seconds: float
    maxrss_kb: int
    peak_tree_rss_kb: int
    timed_out: bool
    process_peaks_kb: dict[str, int] = field(default_factory=dict)
    """Largest RSS seen of each process of the tree, by `process_name` (sampled)."""

    @property
    def cpu_seconds(self) -> float:
        return self.user_seconds + self.system_seconds


def process_tree(pid: int) -> list[int]:
    """The process and all its live descendants, from /proc/PID/task/TID/children."""
    found = [pid]
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                with contextlib.suppress(OSError):
                    children = Path(f"/proc/{current}/task/{task}/children").read_text()
                    found += [int(c) for c in children.split()]
    return found


def tree_rss_kb(pid: int) -> int:
    return sum(tree_rss_by_pid_kb(pid).values())


def tree_rss_by_pid_kb(pid: int) -> dict[int, int]:
    found = {}
    for p in process_tree(pid):
        with contextlib.suppress(OSError, IndexError, ValueError):
            found[p] = int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE_SIZE // 1024
    return found


def process_name(pid: int) -> str:
    """`archiver crawl` for ``python -m archiver crawl ...``, the module for another ``-m``,
    else the program's base name (GNU time, wget, ...)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in args if a]
    if "-m" in words[:-1]:
        module = words[words.index("-m") + 1]
        rest = words[words.index("-m") + 2 :]
        return f"archiver {rest[0]}" if module == "archiver" and rest else module
    return Path(words[0]).name if words else "?"


class _Watcher(threading.Thread):
    """Samples the tree's RSS and enforces the time limit (SIGTERM, then SIGKILL, to the group)."""

    def __init__(self, pid: int, timeout: float) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.timeout = timeout
        self.peak_kb = 0
        self.peaks: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self.timed_out = False
        self.done = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.done.wait(0.05):
            sizes = tree_rss_by_pid_kb(self.pid)
            self.peak_kb = max(self.peak_kb, sum(sizes.values()))
            for pid, size in sizes.items():
                if pid not in self.names:
                    self.names[pid] = process_name(pid)
                self.peaks[pid] = max(self.peaks.get(pid, 0), size)
            elapsed = time.monotonic() - started
            if elapsed > self.timeout and not self.timed_out:
                self.timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGTERM)
            if self.timed_out and elapsed > self.timeout + 10:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)


def run_measured(
    command: Sequence[str],
    *,
    timeout: float,
    stdout: Path,
    stderr: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Measured:
    """Run `command` in its own session; everything left of its group is killed afterwards."""
    rss_file = stderr.with_name(stderr.name + ".maxrss")
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        command = [str(gnu_time), "-f", "%M", "-o", str(rss_file), *command]
    with stdout.open("wb") as out, stderr.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        watcher = _Watcher(process.pid, timeout)
        watcher.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        watcher.done.set()
        watcher.join()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    maxrss = usage.ru_maxrss
    with contextlib.suppress(OSError, ValueError, IndexError):
        maxrss = int(rss_file.read_text().split()[-1])
    return Measured(
        returncode=process.returncode,
        wall_seconds=wall,
        user_seconds=usage.ru_utime,
        system_seconds=usage.ru_stime,
        maxrss_kb=maxrss,
        peak_tree_rss_kb=max(watcher.peak_kb, maxrss),
        timed_out=watcher.timed_out,
        process_peaks_kb=peaks_by_name(watcher.peaks, watcher.names),
    )


def peaks_by_name(peaks: dict[int, int], names: dict[int, str]) -> dict[str, int]:
    """The largest RSS of each kind of process (several index workers count as one name)."""
    found: dict[str, int] = {}
    for pid, size in peaks.items():
        name = names.get(pid, "?")
        if name == "time":
            continue  # GNU time, the measuring wrapper
        found[name] = max(found.get(name, 0), size)
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def medians(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The median of each figure over `runs` (dicts with the same keys), for A/B tables."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def child_figures(module: str, args: Sequence[str], code: str, root: str) -> dict[str, float]:
    """Run ``python -m MODULE ARGS`` with the code of another revision (`code`, a checkout's
    folder; '' for this tree) ahead of `root` on the path; its last line of output is its
    figures as JSON.  One fresh process per run, so A/B runs share nothing."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([p for p in (code, root) if p])}
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures
