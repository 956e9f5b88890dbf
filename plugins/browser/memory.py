"""Chromium's memory, capped: a page that keeps allocating is ended, and the crawl goes on.

Two bounds.  V8's own heap limit (``--js-flags=--max-old-space-size``) stops a script's
objects at twice `memory_limit`; what lives outside that heap (array buffers, DOM nodes, canvases)
is watched by `MemoryWatchdog`, which reads the private resident memory of every process of
the Chromium it was given from ``/proc`` a few times a second and kills a renderer over the
page limit (the page then crashes) or, when the whole tree is over its limit, the largest
renderer.  Either way the tab's crash is told apart from other crashes: the watchdog counts
the renderers it ended and those that died near the limit (V8's own stop), and a page that
crashed right after takes one of them as its reason.  Where ``/proc`` is missing (not
Linux), only V8's limit applies.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("archiver.browser")

POLL_SECONDS = 0.2
MEMORY_END_SECONDS = 5.0
"""How long a renderer ended for memory stays a possible reason for a page's crash."""
_PROC = Path("/proc")


def js_flags(limit_mb: int) -> str:
    """The V8 switch that caps a page's JavaScript heap: at twice the page's limit, so that
    the watchdog (which sees the heap in the resident size) normally ends the page first and
    says why; V8's stop is for a watchdog that fell behind."""
    return f"--js-flags=--max-old-space-size={2 * limit_mb}"


@dataclass(frozen=True, slots=True)
class Process:
    pid: int
    rss_mb: int
    renderer: bool


def _parent(pid: str) -> int | None:
    try:
        stat = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields after the last ')'
    return int(stat.rsplit(")", 1)[1].split()[1])


def _private_mb(pid: int) -> int:
    """Resident memory of the process's own (anonymous and shared-memory) pages: what a page's
    allocations make grow.  The mapped executable and libraries, shared by every process of
    Chromium, are left out so the tree's sum means something."""
    kilobytes = 0
    try:
        with (_PROC / str(pid) / "status").open() as status:
            for line in status:
                if line.startswith(("RssAnon:", "RssShmem:")):
                    kilobytes += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return kilobytes // 1024


def _command_line(pid: int) -> bytes:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def find_process(marker: str) -> int | None:
    """The process whose command line holds `marker` (the Chromium started with it)."""
    wanted = marker.encode()
    with contextlib.suppress(OSError), os.scandir(_PROC) as entries:
        for entry in entries:
            if entry.name.isdigit() and wanted in _command_line(int(entry.name)):
                return int(entry.name)
    return None


def process_tree(root: int, kinds: dict[int, bool]) -> list[Process]:
    """`root` and its descendants with their private memory; `kinds` remembers which are renderers."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    with contextlib.suppress(OSError), os.scandir(_PROC) as entries:
        for entry in entries:
            if entry.name.isdigit():
                parent = _parent(entry.name)
                if parent is not None:
                    children[parent].append(int(entry.name))
    found: list[Process] = []
    todo = [root] if (_PROC / str(root)).exists() else []
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        if not kinds.get(pid):
            # A zygote's child rewrites its command line as one string (no split on NULs), and
            # only after the fork: seen before that, a renderer still reads as the zygote, so a
            # process is asked again until it reads as a renderer.
            kinds[pid] = b"--type=renderer" in _command_line(pid)
        found.append(Process(pid, _private_mb(pid), kinds[pid]))
    return found


class MemoryWatchdog:
    """Watches one Chromium's process tree; `ended_for_memory` tells a crashed page why."""

    def __init__(self, page_limit_mb: int, tree_limit_mb: int) -> None:
        self.page_limit_mb = page_limit_mb
        self.tree_limit_mb = tree_limit_mb
        self.kills = 0
        self._ends: collections.deque[float] = collections.deque(maxlen=64)
        self._last: dict[int, int] = {}
        self._kinds: dict[int, bool] = {}
        self._killed: set[int] = set()

    @staticmethod
    def available() -> bool:
        return (_PROC / "self" / "status").exists()

    async def watch(self, marker: str) -> None:
        """Poll the tree of the Chromium started with `marker` until cancelled (or it is gone)."""
        try:
            await self._watch(marker)
        except Exception:  # the watchdog must never take the crawl down
            log.exception("browser: the memory watchdog stopped; V8's heap limit still applies")

    async def _watch(self, marker: str) -> None:
        root = None
        for _ in range(50):
            root = await asyncio.to_thread(find_process, marker)
            if root is not None:
                break
            await asyncio.sleep(POLL_SECONDS)
        if root is None:
            log.warning("browser: Chromium's processes not found; its memory is capped by V8 only")
            return
        while True:
            tree = await asyncio.to_thread(process_tree, root, self._kinds)
            if not tree:
                return
            self.check(tree)
            await asyncio.sleep(POLL_SECONDS)

    def check(self, tree: list[Process]) -> None:
        """Kill what is over its limit; count the renderers that died near it."""
        now = time.monotonic()
        alive = {process.pid for process in tree}
        for pid, rss in list(self._last.items()):
            if pid not in alive:
                del self._last[pid]
                if rss * 2 >= self.page_limit_mb:  # V8 stopped it at its heap limit
                    self._ends.append(now)
        self._killed &= alive
        for pid in [pid for pid in self._kinds if pid not in alive]:
            del self._kinds[pid]
        renderers = [process for process in tree if process.renderer and process.pid not in self._killed]
        for process in renderers:
            if process.rss_mb > self.page_limit_mb:
                self._kill(process, f"over memory_limit = {self.page_limit_mb} MB")
        renderers = [process for process in renderers if process.pid not in self._killed]
        total = sum(process.rss_mb for process in tree if process.pid not in self._killed)
        if total > self.tree_limit_mb and renderers:
            largest = max(renderers, key=lambda process: process.rss_mb)
            self._kill(largest, f"Chromium over {self.tree_limit_mb} MB in all")
            renderers.remove(largest)
        for process in renderers:
            self._last[process.pid] = process.rss_mb

    def ended_for_memory(self) -> bool:
        """True (once per renderer) when one was ended for memory in the last few seconds."""
        now = time.monotonic()
        while self._ends and now - self._ends[0] > MEMORY_END_SECONDS:
            self._ends.popleft()
        if self._ends:
            self._ends.popleft()
            return True
        return False

    def _kill(self, process: Process, why: str) -> None:
        log.info("browser: ending renderer %d at %d MB (%s)", process.pid, process.rss_mb, why)
        try:
            os.kill(process.pid, signal.SIGKILL)
        except OSError:
            return
        self.kills += 1
        self._killed.add(process.pid)
        self._last.pop(process.pid, None)
        self._ends.append(time.monotonic())
