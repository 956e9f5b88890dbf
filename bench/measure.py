"""Run one command in a fresh child and measure what it cost: wall, CPU, peak memory.

CPU comes from the kernel's rusage of the child (wait4), which includes every descendant it
waited for (archiver's index and WARC writer processes). Memory is given three ways: `maxrss` is
the largest single process, `peak_tree_rss` the largest sum of RSS over the whole process tree,
sampled from /proc every 50 ms (what the machine had to hold), and `process_peaks` the largest
RSS of each process of the tree, by name (`archiver crawl`, `archiver_plugins.warc.worker`, ...).
`process_cpu_seconds` splits the CPU the same way: each process's utime + stime from
/proc/PID/stat, the last value sampled before it exits, summed over the processes of one name.
A process that exits between two samples loses what it spent since the last one (at most one
interval, 50 ms); one that lives less than an interval may not be seen at all. What the
samples miss is the difference from the rusage total (`unsampled_cpu_seconds`).

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
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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
    process_cpu_seconds: dict[str, float] = field(default_factory=dict)
    """CPU (user + system) of the processes of each name, as last sampled before they exited."""

    @property
    def cpu_seconds(self) -> float:
        return self.user_seconds + self.system_seconds

    @property
    def unsampled_cpu_seconds(self) -> float:
        """CPU the rusage total counts and the samples missed (processes' last moments)."""
        return max(0.0, self.cpu_seconds - sum(self.process_cpu_seconds.values()))


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


@dataclass(frozen=True)
class ProcessStat:
    """What /proc/PID/stat says of a process: enough to tell it from a later one of the same
    PID (its start time) and what CPU it has used."""

    parent: int
    started_ticks: int
    cpu_seconds: float


def process_stat(pid: int) -> ProcessStat | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and ")"
    # fields[0] is field 3 of proc(5): ppid is 4, utime 14, stime 15, starttime 22
    return ProcessStat(
        parent=int(fields[1]),
        started_ticks=int(fields[19]),
        cpu_seconds=(int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
    )


def process_name(pid: int) -> str:
    """`archiver crawl` for ``python -m archiver crawl ...``, the module for another ``-m``,
    the parent's name and `worker` for a multiprocessing child (``PARENT worker``), else the
    program's base name (GNU time, wget, ...)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in args if a]
    if "-c" in words[:-1]:
        code = words[words.index("-c") + 1]
        if "multiprocessing.spawn" in code or "multiprocessing.forkserver" in code:
            stat = process_stat(pid)
            return f"{process_name(stat.parent)} worker" if stat else "multiprocessing worker"
        if "multiprocessing.resource_tracker" in code:
            return "multiprocessing.resource_tracker"
    if "-m" in words[:-1]:
        module = words[words.index("-m") + 1]
        rest = words[words.index("-m") + 2 :]
        return f"archiver {rest[0]}" if module == "archiver" and rest else module
    return Path(words[0]).name if words else "?"


class _Watcher(threading.Thread):
    """Samples the tree's RSS and each process's CPU, and enforces the time limit (SIGTERM,
    then SIGKILL, to the group).

    A process is named at every sample (a child seen between fork and exec still bears its
    parent's command line), so its RSS counts under the name it had then and its CPU under
    the last name it had."""

    def __init__(self, pid: int, timeout: float, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.timeout = timeout
        self.interval = interval
        self.peak_kb = 0
        self.peaks: dict[str, int] = {}
        self.cpu: dict[tuple[int, int], tuple[str, float]] = {}
        """(PID, start time) -> (name, CPU seconds) as last sampled."""
        self.timed_out = False
        self.done = threading.Event()

    def sample(self) -> None:
        sizes = tree_rss_by_pid_kb(self.pid)
        self.peak_kb = max(self.peak_kb, sum(sizes.values()))
        for pid, size in sizes.items():
            stat = process_stat(pid)
            name = process_name(pid)
            if stat is None:
                continue
            key = (pid, stat.started_ticks)
            if name == "?" and key in self.cpu:
                name = self.cpu[key][0]  # exited, not yet reaped: its command line is gone
            self.peaks[name] = max(self.peaks.get(name, 0), size)
            self.cpu[key] = (name, stat.cpu_seconds)

    def cpu_by_name(self) -> dict[str, float]:
        """CPU seconds of each kind of process, GNU time (the measuring wrapper) left out."""
        found: dict[str, float] = {}
        for name, seconds in self.cpu.values():
            if name != "time":
                found[name] = found.get(name, 0.0) + seconds
        return dict(sorted(found.items(), key=lambda item: -item[1]))

    def run(self) -> None:
        started = time.monotonic()
        while not self.done.wait(self.interval):
            self.sample()
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
        process_peaks_kb=peaks_by_name(watcher.peaks),
        process_cpu_seconds=watcher.cpu_by_name(),
    )


def peaks_by_name(peaks: dict[str, int]) -> dict[str, int]:
    """The largest RSS of each kind of process (several index workers count as one name),
    GNU time (the measuring wrapper) left out."""
    found = {name: size for name, size in peaks.items() if name != "time"}
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
