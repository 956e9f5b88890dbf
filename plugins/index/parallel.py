"""Indexing on every core: worker processes that read, parse and analyse pages for one writer.

One Python process uses one core, and most of indexing is Python: reading a share of the
spool or of the WARC files (decompression, decoding), extracting the text and analysing it
(`store.make_document`).  So the process holding the archive's writer lock (the writer
after a crawl, or `reindex`) hands out work to N worker processes and adds the documents
they send back to the engine, which is the only part that must be one process.

- Work is cut into small chunks (a few dozen spooled rows, or a byte range of a WARC file)
  that the workers take from one queue as they become free: no worker waits for the
  slowest one, and no round ends with idle cores.
- At most QUEUED_PER_WORKER chunks per worker are out at once, so the documents on their
  way back stay a few megabytes whatever the backlog.

Nothing is lost to a kill: spooled rows are deleted only once a commit holds their
documents (`drain`), and `reindex` swaps its new index in only when it is complete.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spool import Spool
from .store import Capture, make_document

log = logging.getLogger("archiver.index")

ROWS_PER_CHUNK = 32
"""Spooled rows a worker takes at a time: ~0.2 s of work, so shares stay even."""
QUEUED_PER_WORKER = 4
"""Chunks out at once for each worker (queued or on their way back): enough that none
waits while the parent adds documents, few enough that the documents held are small."""
COMMIT_SECONDS = 10.0
"""While a drain runs, the parent commits every `batch_size` pages, or this often, whichever
comes first: a commit is what lets the spool give up its rows, and each one writes a segment
that tantivy merges later."""


def default_processes() -> int:
    """The machine's cores (at most 256, the largest `processes` setting)."""
    return max(1, min(os.cpu_count() or 1, 256))


@dataclass
class Pass:
    """What one pass of the workers handed back, as the parent sees it."""

    indexed: int = 0
    skipped: int = 0
    chunks: dict[int, Any] = field(default_factory=dict)
    """chunk id -> what its worker reported once it was read."""


Received = Callable[[int, list[tuple[Any, dict[str, Any]]]], None]
"""Called with a chunk's id and its (key, document) pairs, in the order they were read."""


class Workers:
    """N processes taking chunks of work from one queue (see the module's docstring)."""

    def __init__(
        self,
        spool: Path | None,
        count: int,
        max_chars: int,
        read_chunk: Callable[[tuple[Any, ...]], Any] | None = None,
    ) -> None:
        """`read_chunk` turns a job other than spooled rows (a range of a WARC file) into
        an object with `captures()` and `report()`; a module-level function, which the
        workers unpickle by its name (its module is imported there, not here)."""
        context = multiprocessing.get_context("spawn")
        self.count = count
        self._jobs: Any = context.Queue()
        self._results: Any = context.Queue()
        self._processes: list[Any] = []
        for number in range(count):
            process = context.Process(
                target=_work,
                args=(
                    str(spool) if spool is not None else "",
                    read_chunk,
                    max_chars,
                    number,
                    self._jobs,
                    self._results,
                    os.getpid(),
                ),
                name=f"archiver-index-{number}",
                daemon=True,
            )
            process.start()
            self._processes.append(process)

    def run(
        self,
        jobs: Iterable[tuple[Any, ...]],
        received: Received,
        keep_going: Callable[[], bool] = lambda: True,
        more: Callable[[Pass], Iterable[tuple[Any, ...]]] | None = None,
        progress: Callable[[Pass], None] | None = None,
    ) -> Pass:
        """Hand out `jobs` (each ``(kind, chunk id, ...)``), then those `more` gives once
        they are all done, and pass each chunk's documents to `received` as they come back.
        When `keep_going()` turns false, the chunks not started are dropped.  Returns once
        every chunk handed out came back."""
        done = Pass()
        queued = iter(jobs)  # handed out as workers free up: the queue holds a few at a time
        waiting = self._put(itertools.islice(queued, QUEUED_PER_WORKER * self.count))
        stopping = False
        while True:
            if not stopping and not keep_going():
                stopping = True
                waiting -= self._drop()
            if waiting == 0 and more is not None:
                waiting += self._put(() if stopping else more(done))
                more = None
            if waiting == 0:
                return done
            message = self._next()
            if message is None:
                continue
            if message[0] == "error":
                raise RuntimeError(f"index worker failed: {message[2]}")
            _, _, chunk, documents, skipped, report = message
            waiting -= 1
            if not stopping:
                waiting += self._put(itertools.islice(queued, 1))
            received(chunk, documents)
            done.indexed += len(documents)
            done.skipped += skipped
            done.chunks[chunk] = report
            if progress is not None:
                progress(done)

    def _put(self, jobs: Iterable[tuple[Any, ...]]) -> int:
        count = 0
        for job in jobs:
            self._jobs.put(job)
            count += 1
        return count

    def _drop(self) -> int:
        """Take back the chunks no worker started; returns how many."""
        dropped = 0
        while True:
            try:
                self._jobs.get(timeout=0.05)
            except queue.Empty:
                return dropped
            dropped += 1

    def _next(self) -> tuple[Any, ...] | None:
        try:
            message: tuple[Any, ...] = self._results.get(timeout=0.25)
            return message
        except queue.Empty:
            dead = [p for p in self._processes if not p.is_alive()]
            if dead:
                raise RuntimeError(f"index worker exited with {dead[0].exitcode}") from None
            return None

    def close(self) -> None:
        for _ in self._processes:
            self._jobs.put(None)
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        self._jobs.close()
        self._results.close()


# -- the catch-up after a crawl ------------------------------------------------------------


def drain(
    batcher: Any,
    spool: Spool,
    workers: Workers,
    after: int,
    keep_going: Callable[[], bool],
) -> tuple[int, int]:
    """Index every spooled row after `after` with the workers, adding the documents through
    `batcher` (a `writer.Batcher`); returns (indexed, last row): every row up to it is in
    the index (or was replaced by a later row of its URL)."""
    indexed = 0
    while keep_going():
        last = spool.last_id()
        if last is None or last <= after:
            break
        done, handled = _drain_rows(batcher, spool, workers, after, last, keep_going)
        indexed += done
        if not handled:
            first = spool.first_after(after)
            return indexed, (first - 1) if first is not None else last
        after = last
    return indexed, after


def _drain_rows(
    batcher: Any, spool: Spool, workers: Workers, after: int, last: int, keep_going: Callable[[], bool]
) -> tuple[int, bool]:
    """Index the rows after `after` up to `last` (the newest row of each URL; the older
    ones are deleted with it).  The parent holds the chunks out and the few URLs spooled
    twice, not the backlog: its ids and URLs are read from the spool as needed."""
    older = {url: ids[:-1] for url, ids in spool.repeated(after, last).items()}
    replaced = {row_id for ids in older.values() for row_id in ids}
    stopped = False
    added: list[int] = []
    committed = time.monotonic()

    def commit() -> None:
        batcher.commit()
        gone = list(added)
        if older:
            for _, url in spool.urls_of(added):
                gone += older.get(url, ())
        spool.delete_ids(gone)
        added.clear()

    def received(chunk: int, documents: list[tuple[Any, dict[str, Any]]]) -> None:
        nonlocal committed
        for row_id, document in documents:
            batcher.add_document(document)
            added.append(row_id)
        if batcher.due(timed=False) or time.monotonic() - committed >= COMMIT_SECONDS:
            commit()
            committed = time.monotonic()

    def going() -> bool:
        nonlocal stopped
        stopped = stopped or not keep_going()
        return not stopped

    result = workers.run(_chunks(spool, after, last, replaced), received, going)
    commit()
    if not stopped:
        # rows of URLs whose page could not be indexed: nothing more will come of them
        spool.delete_upto(last)
    return result.indexed, not stopped


def _chunks(spool: Spool, after: int, last: int, replaced: set[int]) -> Iterator[tuple[str, int, list[int]]]:
    """("rows", chunk number, ROWS_PER_CHUNK row ids) for the rows after `after` up to
    `last`, less the `replaced` ones, read from the spool a page at a time as the workers
    take them."""
    number = 0
    chunk: list[int] = []
    while True:
        ids = spool.ids_between(after, last, 4096)
        if not ids:
            break
        for row_id in ids:
            if row_id in replaced:
                continue
            chunk.append(row_id)
            if len(chunk) == ROWS_PER_CHUNK:
                yield "rows", number, chunk
                number += 1
                chunk = []
        after = ids[-1]
    if chunk:
        yield "rows", number, chunk


# -- the worker processes ------------------------------------------------------------------


def _work(
    spool_file: str,
    read_chunk: Callable[[tuple[Any, ...]], Any] | None,
    max_chars: int,
    number: int,
    jobs: Any,
    results: Any,
    parent: int,
) -> None:
    """One worker: chunks from `jobs` until told to stop (None)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides when to stop
    spool = Spool(Path(spool_file)) if spool_file else None
    try:
        while True:
            try:
                job = jobs.get(timeout=0.5)
            except queue.Empty:
                if os.getppid() != parent:  # the writer was killed: nothing to hand back
                    return
                continue
            if job is None:
                return
            try:
                results.put(_run(job, spool, read_chunk, max_chars, number))
            except Exception as exc:
                log.debug("index worker failed", exc_info=True)
                results.put(("error", number, f"{type(exc).__name__}: {exc}"))
    finally:
        if spool is not None:
            spool.close()


def _run(
    job: tuple[Any, ...],
    spool: Spool | None,
    read_chunk: Callable[[tuple[Any, ...]], Any] | None,
    max_chars: int,
    number: int,
) -> tuple[Any, ...]:
    kind, chunk = job[0], job[1]
    report: Any = None
    if kind == "rows":
        assert spool is not None
        documents, skipped = _documents(spool.rows_with_ids(job[2]), max_chars)
    else:
        assert read_chunk is not None, f"no reader for {kind} jobs"
        found = read_chunk(job)
        documents, skipped = _documents(found.captures(), max_chars)
        report = found.report()
    return ("done", number, chunk, documents, skipped, report)


def _documents(
    captures: Iterable[tuple[Any, Capture]], max_chars: int
) -> tuple[list[tuple[Any, dict[str, Any]]], int]:
    documents: list[tuple[Any, dict[str, Any]]] = []
    skipped = 0
    for key, capture in captures:
        try:
            documents.append((key, make_document(capture, max_chars)))
        except Exception as exc:  # one broken page must not stop the index
            log.warning("index: skipped %s: %s", capture.url, exc)
            skipped += 1
    return documents, skipped
