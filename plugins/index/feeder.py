"""The crawl's side of indexing: a spool thread and the writer process.

`page_fetched` hands its page to one thread that writes pages to the on-disk spool, and
returns only once the page is committed there: the crawl marks a URL done after its
hooks return, so a page whose URL is done is never lost to a kill.  A page the WARC files
hold already is spooled as a reference to its record, found by the thread in the CDXJ lines
the WARC writer has just written (lines.py), not as a copy of the page.  The thread commits
whatever arrived while the previous transaction ran as one transaction and settles one
asyncio future for that whole batch (group commit: no per-page commit, no per-page wake-up
of the event loop).  The same thread keeps an eye on the writer process: it restarts a
writer that died (a killed writer loses nothing, its uncommitted pages are still spooled)
and measures how far the index lags.  At most `queue_size` pages wait in memory; more
puts wait for the next commit, which slows the crawl rather than growing memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from archiver.api import WARC_FOLDER, ArchiveError, exhausted

from .lines import RecordLines, Stored
from .settings import IndexSettings
from .spool import Spool
from .store import EXIT_EXHAUSTED, Capture, spool_path

log = logging.getLogger("archiver.index")


class IndexFeeder:
    def __init__(self, archive: Path, options: IndexSettings) -> None:
        self.archive = archive
        self.options = options
        self.spooled = 0
        self.batches = 0
        """Spool transactions so far (each settles one future for all its pages)."""
        self.pending = 0
        self.restarts = 0
        self._closing = False
        self._stopping = False
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._spool: Spool | None = None
        self._lines: RecordLines | None = None
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrived = threading.Condition()
        self._waiting: list[tuple[Capture, Stored | None]] = []
        """Pages handed over by `put` and not yet in a spool transaction."""
        self._batch: asyncio.Future[None] | None = None
        """Settled when the pages in `_waiting` are committed to the spool."""
        self._ended = False

    # -- life cycle (blocking: call through asyncio.to_thread) ------------------------

    def start(self) -> None:
        """Open the spool and start the spool thread; the writer process is started by
        that thread, once there is something to index, so the crawl never waits for it."""
        self._spool = Spool(spool_path(self.archive))
        self._lines = RecordLines(self.archive / WARC_FOLDER)
        self.pending = self._spool.pending()
        self._thread = threading.Thread(target=self._run, name="index-spool", daemon=True)
        self._thread.start()

    def stop_draining(self) -> None:
        """Ctrl-C while waiting for the index after the crawl: commit and leave the rest."""
        self._stopping = True
        process = self._process
        if process is not None:
            self._tell(process, "stop")

    def close(self, interrupted: bool) -> None:
        """Spool what is waiting, then let the writer drain (or stop, on Ctrl-C) and exit."""
        if self._thread is not None:
            with self._arrived:
                self._ended = True
                self._arrived.notify()
            self._thread.join()
        self._closing = True
        mode = "stop" if interrupted or not self.options.wait else "drain"
        if self._process is None and mode == "drain" and self.pending:
            self._spawn()
        while True:
            process = self._process
            if process is None:
                break
            self._tell(process, "stop" if self._stopping else mode)
            code = self._wait_for(process)
            _retire(process)
            if code == 0 or mode == "stop" or self._stopping or self.restarts >= self.options.max_restarts:
                break
            if code == EXIT_EXHAUSTED:
                log.warning("index writer stopped (no space or no file handles left); pages stay spooled")
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

    async def put(self, capture: Capture, stored: Stored | None = None) -> None:
        """Return once `capture` is committed to the on-disk spool (never blocks the loop);
        `stored` finds its WARC record, which the spool then refers to instead of a copy."""
        self._check()
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        while True:
            with self._arrived:
                if self._error is not None or self._ended:
                    raise ArchiveError(f"cannot spool pages for the index: {self._error or 'closed'}")
                if len(self._waiting) < self.options.queue_size or self._batch is None:
                    self._waiting.append((capture, stored))
                    batch = self._batch
                    if batch is None:
                        batch = self._batch = self._loop.create_future()
                    self._arrived.notify()
                    break
                full = self._batch
            await asyncio.shield(full)  # too many pages waiting: wait for the next commit
        # shielded: a cancelled fetch must not cancel the batch the other pages wait for
        await asyncio.shield(batch)

    @property
    def lag(self) -> int:
        """Pages fetched but not yet committed to the index."""
        return self.pending + len(self._waiting)

    # -- the spool thread ----------------------------------------------------------------

    def _check(self) -> None:
        if self._error is not None:
            raise ArchiveError(f"cannot spool pages for the index: {self._error}")

    def _run(self) -> None:
        try:
            self._spool_pages()
        except BaseException as exc:  # reported to the crawl by put()
            # a full disk or a spent file limit stops the whole crawl, which says so once
            (log.debug if exhausted(exc) else log.error)("index spool failed: %s", exc)
            with self._arrived:
                self._error = exc
                batch, self._batch = self._batch, None
            self._settle(batch, exc)
        finally:
            if self._lines is not None:
                self._lines.close()

    def _spool_pages(self) -> None:
        assert self._spool is not None
        checked = 0.0
        while True:
            with self._arrived:
                if not self._waiting and not self._ended:
                    self._arrived.wait(0.25)
                pages, batch = self._waiting, self._batch
                self._waiting, self._batch = [], None
                ended = self._ended
            if pages:
                try:
                    self._spool.add(self._referenced(pages))
                except BaseException as exc:
                    self._settle(batch, exc)
                    raise
                self.spooled += len(pages)
                self.batches += 1
            self._settle(batch, None)
            now = time.monotonic()
            watch = now - checked >= 0.5 or (ended and not pages) or (pages and self._process is None)
            if pages or watch:  # two index look-ups: the count the crawl's last page leaves is exact
                self.pending = self._spool.pending()
            if watch:
                checked = now
                self._watch_writer()
            if ended and not pages:
                return

    def _referenced(self, pages: list[tuple[Capture, Stored | None]]) -> list[Capture]:
        """The pages, each with its WARC record when the CDXJ lines show it."""
        assert self._lines is not None
        looked = [(number, stored) for number, (_, stored) in enumerate(pages) if stored is not None]
        captures = [capture for capture, _ in pages]
        found = self._lines.locate([stored for _, stored in looked])
        for (number, _), record in zip(looked, found, strict=True):
            if record is not None:
                captures[number] = replace(captures[number], record=record)
        return captures

    def _settle(self, batch: asyncio.Future[None] | None, error: BaseException | None) -> None:
        """Wake the pages waiting for `batch`: one call into the event loop per transaction."""
        if batch is None or self._loop is None:
            return
        failure = ArchiveError(f"cannot spool pages for the index: {error}") if error else None
        with contextlib.suppress(RuntimeError):  # the loop is gone (the crawl ended)
            self._loop.call_soon_threadsafe(_resolve, batch, failure)

    def _watch_writer(self) -> None:
        process = self._process
        if self._closing:
            return
        if process is None:
            if self.pending or self.spooled:
                self._spawn()  # first pages: start the writer (in this thread, not the crawl's)
            return
        if process.poll() is None:
            return
        if process.returncode == EXIT_EXHAUSTED and self.restarts < self.options.max_restarts:
            log.warning("index writer stopped (no space or no file handles left); pages stay spooled")
            self.restarts = self.options.max_restarts + 1
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
                    "--crawl-share",
                    str(options.crawl_share),
                    "--processes",
                    str(options.processes),
                    *(["--engine", options.engine] if options.engine else []),
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


def _resolve(batch: asyncio.Future[None], failure: BaseException | None) -> None:
    if batch.done():
        return
    if failure is None:
        batch.set_result(None)
    else:
        batch.set_exception(failure)


def _retire(process: subprocess.Popen[bytes]) -> None:
    """Close the pipe of a writer that has exited (an open pipe is a ResourceWarning)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            process.stdin.close()
    process.wait()
