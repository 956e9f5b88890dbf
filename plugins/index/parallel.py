"""Indexing on every core: worker processes that each write whole segments of one index.

whoosh lets one writer hold an index, and one Python process uses one core.  So the
spool is indexed in rounds: the writer (which holds the lock) gives each of N worker
processes a share of the next spooled rows; each parses its pages and writes them as
new segments of the index (whoosh segment writers without the lock, as whoosh's own
multi-process writer does; a new segment whenever one's postings fill its memory), and
returns the segments.  The writer then removes earlier
documents of the round's URLs and commits the new segments in one table of contents
(with any size tier they fill merged, `tiers.py`),
and only then deletes the round's rows from the spool: a kill at any point leaves every
page either committed once or still spooled (segment files no table of contents lists
are removed by the next commit).  Parsing happens in the workers, so a round costs the
writer a few look-ups.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage

from .segment import SegmentBuilder
from .spool import Spool
from .store import INDEX_NAME, make_document
from .tiers import merge_tiers

log = logging.getLogger("archiver.index")


def default_processes() -> int:
    """The machine's cores (at most 256, the largest `processes` setting)."""
    return max(1, min(os.cpu_count() or 1, 256))


class _WorkerStorage(FileStorage):  # type: ignore[misc]
    """The index's folder, with temporary files in a folder of this process's own (whoosh
    names it after the index, and a writer deletes it when done)."""

    def temp_storage(self, name: str | None = None) -> Any:
        return super().temp_storage(f"{INDEX_NAME}.{os.getpid()}.tmp")


def remove_leftovers(folder: Path) -> None:
    """Temporary folders of killed workers (the writer's lock is held: no worker runs)."""
    import shutil

    for leftover in folder.glob(f"{INDEX_NAME}.*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)


class Workers:
    """N processes; `index(rows)` gives each a share and returns their new segments."""

    def __init__(self, folder: Path, spool: Path, count: int, max_chars: int) -> None:
        remove_leftovers(folder)
        context = multiprocessing.get_context("spawn")
        self._jobs: list[Any] = []
        self._results: Any = context.Queue()
        self._processes: list[Any] = []
        for number in range(count):
            jobs = context.Queue()
            process = context.Process(
                target=_work,
                args=(str(folder), str(spool), max_chars, jobs, self._results, os.getpid()),
                name=f"archiver-index-{number}",
                daemon=True,
            )
            process.start()
            self._jobs.append(jobs)
            self._processes.append(process)

    def index(self, row_ids: Sequence[int]) -> tuple[list[Any], int, int]:
        """Index spooled rows (contiguous shares, one per worker): (segments, indexed, skipped)."""
        share = -(-len(row_ids) // len(self._jobs))
        sent = 0
        for number, jobs in enumerate(self._jobs):
            part = list(row_ids[number * share : (number + 1) * share])
            if part:
                jobs.put(part)
                sent += 1
        segments: list[Any] = []
        indexed = skipped = 0
        for _ in range(sent):
            while True:
                try:
                    result = self._results.get(timeout=1.0)
                    break
                except queue.Empty:
                    dead = [p for p in self._processes if not p.is_alive()]
                    if dead:
                        raise RuntimeError(f"index worker exited with {dead[0].exitcode}") from None
            if isinstance(result, BaseException):
                raise result
            written, done, failed = result
            segments += written
            indexed += done
            skipped += failed
        return segments, indexed, skipped

    def close(self) -> None:
        for jobs in self._jobs:
            jobs.put(None)
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        for jobs in self._jobs:
            jobs.close()
        self._results.close()


def _work(folder: str, spool_file: str, max_chars: int, jobs: Any, results: Any, parent: int) -> None:
    """One worker: for each share of rows, its new segments (none when nothing was indexable)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides when to stop
    spool = Spool(Path(spool_file))
    ix = _WorkerStorage(folder, supports_mmap=False).open_index(INDEX_NAME)
    try:
        while True:
            try:
                row_ids = jobs.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:  # the writer was killed: nothing to hand back
                    return
                continue
            if row_ids is None:
                return
            try:
                results.put(_segments(ix, spool, row_ids, max_chars))
            except Exception as exc:
                results.put(RuntimeError(f"index worker failed: {exc}"))
    finally:
        spool.close()
        ix.close()


def _segments(ix: Any, spool: Spool, row_ids: list[int], max_chars: int) -> tuple[list[Any], int, int]:
    """The pages of `row_ids` as new segments: one, or more when a segment's pool fills."""
    segments: list[Any] = []
    writer: Any = None
    indexed = skipped = 0
    for capture in spool.rows(row_ids):
        try:
            document = make_document(capture, max_chars)
        except Exception as exc:  # one broken page must not stop the index
            log.warning("index: skipped %s: %s", capture.url, exc)
            skipped += 1
            continue
        if writer is not None and writer.full:
            segments.append(_written(writer))
            writer = None
        if writer is None:
            writer = SegmentBuilder(ix, _lk=False)
        writer.add_document(**document)
        indexed += 1
    if writer is not None:
        segments.append(_written(writer))
    return segments, indexed, skipped


def _written(writer: Any) -> Any:
    segment = writer._finalize_segment()
    writer._finish()
    return segment


def commit_segments(ix: Any, segments: list[Any], replaced: Sequence[str]) -> None:
    """One commit: earlier documents of the `replaced` URLs deleted, `segments` added."""
    writer = ix.writer(timeout=30.0)
    try:
        searcher = writer.searcher()  # cached by the writer, closed by `_finish`
        for url in replaced:
            writer.delete_by_term("url", url, searcher=searcher)
        final = merge_tiers(writer, [*writer.segments, *segments])
        writer._close_segment()
        writer._commit_toc(final)
        writer._finish()
    except BaseException:
        writer.cancel()
        raise


def index_round(ix: Any, spool: Spool, workers: Workers, round_size: int, after: int) -> tuple[int, int]:
    """Index and commit the next `round_size` spooled rows after `after`, then delete them
    from the spool; returns (pages indexed, last row), (0, after) when none were waiting."""
    rows = spool.urls(after=after, limit=round_size)
    if not rows:
        return 0, after
    newest: dict[str, int] = {}
    for row_id, url in rows:
        newest[url] = row_id  # a URL spooled twice: its later row replaces the earlier
    segments, done, _ = workers.index(sorted(newest.values()))
    commit_segments(ix, segments, list(newest))
    after = rows[-1][0]
    spool.delete_upto(after)
    return done, after


def drain(
    ix: Any,
    spool: Spool,
    workers: Workers,
    round_size: int,
    after: int,
    keep_going: Any,
) -> tuple[int, int]:
    """Index every spooled row after `after`, round by round; returns (indexed, last row)."""
    indexed = 0
    while keep_going():
        done, last = index_round(ix, spool, workers, round_size, after)
        if last == after:
            break
        indexed, after = indexed + done, last
    return indexed, after
