"""The index writer: a process of its own that turns spooled pages into index documents.

Run as ``python -m archiver_plugins.index.writer ARCHIVE``.  It parses HTML and analyses
its text in Python (`store.make_document`), so it must not share the crawl's GIL.  It commits
every `batch_size` pages or `batch_seconds`, whichever comes first, so `archiver search`
sees a running crawl's pages (once told to drain, every `batch_size` pages).  While the
crawl runs, it uses at most `crawl_share` of one
CPU (it sleeps in proportion to the CPU time it spent): on a machine with few cores a
writer at full speed slows the crawl beside it (they share caches and memory bandwidth
even on separate cores), and the pages it has not reached are indexed at full speed once
the crawl ends.  Its standard input is the control channel: a line
``drain`` means "index everything spooled, commit, exit"; ``stop`` (or end of input, as
when the crawl process died) means "commit what you have and exit".  Ctrl-C in the
terminal reaches every process of the group: the writer ignores it and waits for the
crawl to say ``stop``, so an interrupted crawl still commits.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from archiver.api import ArchiveLockedError, exhausted

from .engine import Engine
from .spool import Spool
from .store import (
    DEFAULT_MAX_CHARS,
    EXIT_EXHAUSTED,
    Capture,
    WriterLock,
    engine_dir,
    make_document,
    open_or_create,
    present_dir,
    spool_path,
)

log = logging.getLogger("archiver.index")


class Batcher:
    """Adds documents to an engine and commits in batches; also used by `reindex`."""

    def __init__(self, engine: Engine, batch_size: int, batch_seconds: float, max_chars: int) -> None:
        self.engine = engine
        self.batch_size = batch_size
        self.batch_seconds = batch_seconds
        self.max_chars = max_chars
        self.uncommitted = 0
        self.indexed = 0
        self.skipped = 0
        self._since = 0.0

    def add(self, capture: Capture) -> None:
        """Index `capture` in place of any earlier document of its URL."""
        try:
            document = make_document(capture, self.max_chars)
        except Exception as exc:  # one broken page must not stop the index
            log.warning("index: skipped %s: %s", capture.url, exc)
            self.skipped += 1
            return
        self.add_document(document)

    def add_document(self, document: dict[str, Any]) -> None:
        if not self.uncommitted:
            self._since = time.monotonic()
        self.engine.add(document)
        self.uncommitted += 1

    def due(self, timed: bool = True) -> bool:
        """A batch is full, or (`timed`) `batch_seconds` passed since its first page."""
        if not self.uncommitted:
            return False
        return self.uncommitted >= self.batch_size or (
            timed and time.monotonic() - self._since >= self.batch_seconds
        )

    def commit(self) -> int:
        """Commit what was added; returns how many documents that was."""
        if not self.uncommitted:
            return 0
        self.engine.commit()
        done, self.uncommitted = self.uncommitted, 0
        self.indexed += done
        return done

    def cancel(self) -> None:
        self.engine.cancel()
        self.uncommitted = 0


class Control:
    """What the crawl asked for on standard input: None (keep going), 'drain' or 'stop'."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode: str | None = mode
        self.wake = threading.Event()

    def listen(self) -> None:
        for line in sys.stdin:
            word = line.strip()
            if word in ("drain", "stop"):
                self.mode = word
                self.wake.set()
                if word == "stop":
                    return
        if self.mode is None:
            self.mode = "stop"
        self.wake.set()


def run(
    archive: Path,
    batch_size: int,
    batch_seconds: float,
    max_chars: int,
    control: Control | None = None,
    lock_wait: float = 60.0,
    crawl_share: float = 1.0,
    processes: int = 1,
    engine: str | None = None,
) -> int:
    """Index spooled pages until told to stop; with a `control` already set to 'drain',
    index what is spooled and return (``archiver reindex --pending``).  Once told to
    drain, more than `batch_size` pages left are indexed by `processes` worker processes."""
    if control is None:
        control = Control()
        threading.Thread(target=control.listen, name="index-control", daemon=True).start()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: _set_stop(control))
        # on a busy machine the crawl goes first; the index catches up after
        with contextlib.suppress(OSError):
            os.nice(10)
    parent = os.getppid()
    lock = WriterLock(archive)
    _acquire(lock, control, lock_wait)
    index, note = open_or_create(present_dir(archive) or engine_dir(archive, engine))
    if note:
        print(f"archiver: {note}", file=sys.stderr, flush=True)
    spool = Spool(spool_path(archive))
    batcher = Batcher(index, batch_size, batch_seconds, max_chars)
    last = 0
    try:
        while control.mode != "stop":
            spent = time.process_time()
            rows = spool.read(after=last, limit=32)
            for row_id, capture in rows:
                if capture is not None:  # None: its WARC record is gone (said as a warning)
                    batcher.add(capture)
                last = row_id
                if control.mode == "stop":
                    break
            # commits every `batch_seconds` keep a running crawl's pages searchable; once the
            # crawl is done they would only cut the catch-up into more, smaller segments
            if batcher.due(timed=control.mode is None) or (not rows and control.mode == "drain"):
                batcher.commit()
                spool.delete_upto(last)
            if control.mode == "drain" and processes > 1 and spool.pending() > batch_size:
                batcher.commit()
                spool.delete_upto(last)
                last = _drain_in_parallel(index, batcher, spool, control, processes, max_chars, last)
                continue
            if rows:
                if control.mode is None and crawl_share < 1.0:  # the crawl still runs
                    spent = time.process_time() - spent
                    control.wake.wait(spent * (1.0 - crawl_share) / crawl_share)  # drain/stop wake it
                continue
            if control.mode == "drain":
                break
            if os.getppid() != parent:
                break
            if not batcher.uncommitted:
                spool.shrink()  # caught up with the crawl: the backlog's room is given back
            control.wake.wait(0.2)
        batcher.commit()
        spool.delete_upto(last)
        spool.shrink()
    finally:
        spool.close()
        index.close()
        lock.release()
    return 0


def _drain_in_parallel(
    index: Engine,
    batcher: Batcher,
    spool: Spool,
    control: Control,
    processes: int,
    max_chars: int,
    after: int,
) -> int:
    from .parallel import Workers, drain

    workers = Workers(spool.path, processes, max_chars)
    try:
        _, after = drain(batcher, spool, workers, after, lambda: control.mode != "stop")
    finally:
        workers.close()
    return after


def _set_stop(control: Control) -> None:
    control.mode = "stop"
    control.wake.set()


def _acquire(lock: WriterLock, control: Control, wait: float) -> None:
    """Wait for a previous writer (or a `reindex`) that is still committing."""
    deadline = time.monotonic() + wait
    while True:
        try:
            lock.acquire()
            return
        except ArchiveLockedError:
            if time.monotonic() >= deadline or control.mode == "stop":
                raise
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="archiver-index-writer")
    parser.add_argument("archive", type=Path)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--batch-seconds", type=float, default=10.0)
    parser.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS)
    parser.add_argument("--crawl-share", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--engine", choices=("tantivy", "whoosh"), default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="archiver: %(message)s")
    try:
        return run(
            args.archive,
            args.batch_size,
            args.batch_seconds,
            args.max_chars,
            crawl_share=args.crawl_share,
            processes=args.processes,
            engine=args.engine,
        )
    except Exception as exc:
        cause = exhausted(exc)
        if cause is None:
            raise
        # What is committed stays and the rest stays spooled; the crawl says what ran out.
        log.debug("index writer stopped: %s", cause)
        return EXIT_EXHAUSTED


if __name__ == "__main__":
    sys.exit(main())
