"""The crawl's side of indexing: a bounded queue, a spool thread, and the writer process.

`page_fetched` only puts a small record on a bounded in-memory queue.  One thread moves
records from that queue to the on-disk spool in transactions and keeps an eye on the
writer process: it restarts a writer that died (a killed writer loses nothing, its
uncommitted pages are still spooled) and measures how far the index lags.  The queue
fills only if the disk cannot keep up with the network; then `put` waits in a worker
thread, which slows the crawl rather than growing memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from archiver.errors import ArchiveError

from .spool import Spool
from .store import Capture, spool_path

log = logging.getLogger("archiver.index")

_END = object()


@dataclass(frozen=True)
class Options:
    """The `[plugins.index]` table, checked."""

    batch_size: int = 500
    batch_seconds: float = 10.0
    queue_size: int = 256
    max_chars: int = 200_000
    wait: bool = True
    max_restarts: int = 5


class IndexFeeder:
    def __init__(self, archive: Path, options: Options) -> None:
        self.archive = archive
        self.options = options
        self.queue: queue.Queue[object] = queue.Queue(maxsize=options.queue_size)
        self.spooled = 0
        self.pending = 0
        self.restarts = 0
        self._closing = False
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._spool: Spool | None = None
        self._lock = threading.Lock()
        self._error: BaseException | None = None

    # -- life cycle (blocking: call through asyncio.to_thread) ------------------------

    def start(self) -> None:
        self._spool = Spool(spool_path(self.archive))
        self.pending = self._spool.pending()
        self._spawn()
        self._thread = threading.Thread(target=self._run, name="index-spool", daemon=True)
        self._thread.start()

    def close(self, interrupted: bool) -> None:
        """Spool what is queued, then let the writer drain (or stop, on Ctrl-C) and exit."""
        if self._thread is not None:
            if self._thread.is_alive():
                self.queue.put(_END)
            self._thread.join()
        self._closing = True
        mode = "stop" if interrupted or not self.options.wait else "drain"
        while True:
            process = self._process
            if process is None:
                break
            self._tell(process, mode)
            code = self._wait_for(process)
            _retire(process)
            if code == 0 or mode == "stop" or self.restarts >= self.options.max_restarts:
                break
            log.warning("index writer exited with %s; restarting it", code)
            self.restarts += 1
            self._spawn()
        if self._spool is not None:
            self.pending = self._spool.pending()
            self._spool.close()
        self._check()

    def _wait_for(self, process: subprocess.Popen[bytes]) -> int:
        """Wait for the writer to exit, keeping `pending` fresh for the progress display."""
        said = time.monotonic()
        while True:
            try:
                return process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                if self._spool is not None:
                    self.pending = self._spool.pending()
                if time.monotonic() - said >= 10:
                    said = time.monotonic()
                    log.info("index: %s pages left to index", f"{self.pending:,}")

    @property
    def writer_pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    # -- the crawl's side ----------------------------------------------------------------

    async def put(self, capture: Capture) -> None:
        self._check()
        try:
            self.queue.put_nowait(capture)
        except queue.Full:
            await asyncio.to_thread(self._put_waiting, capture)

    def _put_waiting(self, capture: Capture) -> None:
        while True:
            self._check()
            try:
                self.queue.put(capture, timeout=0.5)
                return
            except queue.Full:
                continue

    @property
    def lag(self) -> int:
        """Pages fetched but not yet committed to the index."""
        return self.pending + self.queue.qsize()

    # -- the spool thread ----------------------------------------------------------------

    def _check(self) -> None:
        if self._error is not None:
            raise ArchiveError(f"cannot spool pages for the index: {self._error}")

    def _run(self) -> None:
        try:
            self._spool_pages()
        except BaseException as exc:  # reported to the crawl by the next put()
            self._error = exc
            log.error("index spool failed: %s", exc)

    def _spool_pages(self) -> None:
        assert self._spool is not None
        checked = 0.0
        ended = False
        while not ended:
            batch: list[Capture] = []
            try:
                item = self.queue.get(timeout=0.25)
            except queue.Empty:
                item = None
            while item is not None:
                if item is _END:
                    ended = True
                    break
                assert isinstance(item, Capture)
                batch.append(item)
                if len(batch) >= 64:
                    break
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    item = None
            if batch:
                self._spool.add(batch)
                self.spooled += len(batch)
            now = time.monotonic()
            if now - checked >= 0.5 or ended:
                checked = now
                self.pending = self._spool.pending()
                self._watch_writer()

    def _watch_writer(self) -> None:
        process = self._process
        if process is None or process.poll() is None or self._closing:
            return
        if self.restarts >= self.options.max_restarts:
            if self.restarts == self.options.max_restarts:
                log.warning("index writer keeps failing; pages stay spooled for later")
                self.restarts += 1
            return
        log.warning("index writer exited with %s; restarting it", process.returncode)
        _retire(process)
        self.restarts += 1
        self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            options = self.options
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "archiver_plugins.index.writer",
                    str(self.archive),
                    "--batch-size",
                    str(options.batch_size),
                    "--batch-seconds",
                    str(options.batch_seconds),
                    "--max-chars",
                    str(options.max_chars),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
            )

    @staticmethod
    def _tell(process: subprocess.Popen[bytes], word: str) -> None:
        if process.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            process.stdin.write(word.encode() + b"\n")
            process.stdin.flush()
            if word == "stop":
                process.stdin.close()


def _retire(process: subprocess.Popen[bytes]) -> None:
    """Close the pipe of a writer that has exited (an open pipe is a ResourceWarning)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            process.stdin.close()
    process.wait()
