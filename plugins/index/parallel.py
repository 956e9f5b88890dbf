"""Indexing on every core: worker processes that each read, parse and write their own segments.

whoosh lets one writer hold an index, and one Python process uses one core.  So the
process holding the archive's writer lock (the writer after a crawl, or `reindex`) only
hands out work and keeps the table of contents; everything that costs CPU happens in N
worker processes: reading a share of the spool or of the WARC files (decompression,
decoding), extracting the text, analysing it and writing whoosh segments.

- Work is cut into small chunks (a few dozen spooled rows, or a byte range of a WARC
  file) that the workers take from one queue as they become free: no worker waits for
  the slowest one, and no round ends with idle cores.
- A worker keeps its segment open across chunks and writes it once its postings fill
  the segment's memory (`segment.py`), so segments are as large as one process writes
  them.  It merges its own segments as `tiers.merge_tiers` does an index's (a tier of
  SEGMENTS_PER_TIER below the top tier, the top tier's smallest once it is full), in
  parallel with the other workers; the parent swaps the merged segment in with one table
  of contents.
- The parent lists the workers' segments side by side in the table of contents ("searched
  together"), a few times a second at most, and never merges or rewrites a segment:
  whoosh's deletions (a URL indexed again) are marks on a segment in that table.

Nothing is lost to a kill: a table of contents lists only finished segments, spooled
rows are deleted only once a table of contents lists their documents, and files that no
table of contents lists are removed by the final commit (or any later one).  Old tables
of contents are also removed only then: a worker starting a segment reads the newest.
"""

from __future__ import annotations

import array
import bisect
import contextlib
import itertools
import logging
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.index import TOC, clean_files
from whoosh.reading import SegmentReader

from .segment import SegmentBuilder
from .spool import Spool
from .store import INDEX_NAME, WRITER_MEMORY_MB, Capture, make_document
from .tiers import SEGMENTS_PER_TIER, full_tier, merge_segments, merge_tiers

log = logging.getLogger("archiver.index")

ROWS_PER_CHUNK = 32
"""Spooled rows a worker takes at a time: ~0.2 s of work, so shares stay even."""
QUEUED_PER_WORKER = 64
"""Chunks waiting in the queue for each worker (~10 s of its work, ~80 KB): enough that
none waits while the parent lists a segment, few enough that a backlog of a million pages
is not held in the queue."""
COMMIT_SECONDS = 1.0
"""The parent lists new segments in a table of contents at most this often."""


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


# -- the parent's side ---------------------------------------------------------------------


@dataclass
class Fresh:
    """A segment written in this pass: `keys[docnum]` says where each document came from."""

    segment: Any
    keys: list[Any]


class UrlHashes:
    """The URLs of earlier segments as a sorted array of their hashes (8 bytes a URL): a
    URL not in it is in none of them, told without a look-up in each segment (a backlog of
    a million pages against a few hundred segments spent most of the parent's time there)."""

    def __init__(self, lexicons: Iterable[Iterable[bytes]]) -> None:
        self._hashes = array.array("q", sorted(hash(term) for terms in lexicons for term in terms))

    def __contains__(self, url: str) -> bool:
        wanted = hash(url.encode("utf-8"))
        at = bisect.bisect_left(self._hashes, wanted)
        return at < len(self._hashes) and self._hashes[at] == wanted


@dataclass
class Pass:
    """What one pass of the workers handed back, as the parent sees it."""

    indexed: int = 0
    skipped: int = 0
    chunks: dict[int, Any] = field(default_factory=dict)
    """chunk id -> what its worker reported once it was read."""


class Contents:
    """The index's table of contents as the parent keeps it while the workers write.

    `write` lists the segments in a new table of contents (whoosh opens the newest); only
    `write(final=True)` removes the older ones and the files no table lists, when no
    worker writes any more.
    """

    def __init__(self, ix: Any) -> None:
        toc = ix._read_toc()
        self.storage = ix.storage
        self.indexname = ix.indexname
        self.schema = toc.schema
        self.generation = toc.generation
        self.segments: list[Any] = list(toc.segments)
        self.earlier = list(self.segments)
        """The segments from before this pass: the only ones a URL indexed again is deleted from."""
        self.fresh: dict[str, Fresh] = {}
        self.unlisted: list[Fresh] = []
        """Segments received and not yet in a table of contents."""
        self._readers: list[tuple[Any, Any]] | None = None
        self._indexed: UrlHashes | None = None

    def add(self, segment: Any, keys: list[Any]) -> Fresh:
        fresh = Fresh(segment, keys)
        self.fresh[segment.segment_id()] = fresh
        self.unlisted.append(fresh)
        return fresh

    def swap(self, group: Sequence[str], merged: Any) -> Fresh | None:
        """Put the worker's `merged` segment in place of the segments of `group` (its
        documents in their order); the deletions marked on them since are carried over."""
        members = [self.fresh.get(segment_id) for segment_id in group]
        if any(member is None for member in members):
            return None  # cannot happen: a worker merges only segments it sent
        keys: list[Any] = []
        deleted: list[int] = []
        for member in members:
            assert member is not None
            base = len(keys)
            keys += member.keys
            deleted += [base + docnum for docnum in member.segment.deleted_docs()]
            del self.fresh[member.segment.segment_id()]
        if merged.doc_count_all() != len(keys):
            raise RuntimeError("index worker: a merged segment lost documents")
        for docnum in deleted:
            merged.delete_document(docnum)
        ids = set(group)
        self.segments = [s for s in self.segments if s.segment_id() not in ids]
        self.unlisted = [f for f in self.unlisted if f.segment.segment_id() not in ids]
        fresh = Fresh(merged, keys)
        self.fresh[merged.segment_id()] = fresh
        self.unlisted.append(fresh)  # listed by the next table of contents
        return fresh

    def delete_earlier(self, urls: Iterable[str]) -> None:
        """Mark deleted the documents of `urls` in the segments from before this pass."""
        if not self.earlier:
            return
        if self._readers is None:
            self._readers = [
                (segment, SegmentReader(self.storage, self.schema, segment)) for segment in self.earlier
            ]
            self._indexed = UrlHashes(reader.lexicon("url") for _, reader in self._readers)
        assert self._indexed is not None
        for url in urls:
            if url not in self._indexed:
                continue  # a crawl's pages are mostly new: most URLs are in no earlier segment
            for segment, reader in self._readers:
                if ("url", url) in reader:
                    for docnum in reader.postings("url", url).all_ids():
                        segment.delete_document(docnum)

    def write(self, final: bool = False) -> None:
        self.segments += [fresh.segment for fresh in self.unlisted]
        self.unlisted = []
        self.generation += 1
        listed = [segment for segment in self.segments if segment.doc_count() > 0 or not final]
        TOC(self.schema, listed, self.generation).write(self.storage, self.indexname)
        if final:
            self.segments = listed
            self.close()
            clean_files(self.storage, self.indexname, self.generation, listed)

    def close(self) -> None:
        for _, reader in self._readers or ():
            reader.close()
        self._readers = None


class Workers:
    """N processes taking chunks of work from one queue (see the module's docstring)."""

    segment_mb: float = WRITER_MEMORY_MB
    """The postings a worker's segment holds before it is written."""
    per_tier: int = SEGMENTS_PER_TIER
    """A worker merges this many of its segments of one size tier into one."""

    def __init__(
        self,
        folder: Path,
        spool: Path | None,
        count: int,
        max_chars: int,
        read_chunk: Callable[[tuple[Any, ...]], Any] | None = None,
    ) -> None:
        """`read_chunk` turns a job other than spooled rows (a range of a WARC file) into
        an object with `captures()` and `report()`; a module-level function, which the
        workers unpickle by its name (its module is imported there, not here)."""
        remove_leftovers(folder)
        context = multiprocessing.get_context("spawn")
        self.count = count
        self._jobs: Any = context.Queue()
        self._results: Any = context.Queue()
        self._controls: list[Any] = []
        self._processes: list[Any] = []
        for number in range(count):
            control = context.Queue()
            process = context.Process(
                target=_work,
                args=(
                    str(folder),
                    str(spool) if spool is not None else "",
                    read_chunk,
                    max_chars,
                    number,
                    (self.segment_mb, self.per_tier),
                    self._jobs,
                    control,
                    self._results,
                    os.getpid(),
                ),
                name=f"archiver-index-{number}",
                daemon=True,
            )
            process.start()
            self._controls.append(control)
            self._processes.append(process)

    def run(
        self,
        contents: Contents,
        jobs: Iterable[tuple[Any, ...]],
        received: Callable[[Fresh], None],
        committed: Callable[[list[Fresh]], None],
        keep_going: Callable[[], bool] = lambda: True,
        more: Callable[[Pass], Iterable[tuple[Any, ...]]] | None = None,
        progress: Callable[[Pass], None] | None = None,
    ) -> Pass:
        """Hand out `jobs` (each ``(kind, chunk id, ...)``), then those `more` gives once
        they are all done; list the segments that come back in `contents` as they come
        (`received` sees each new one first, `committed` the ones a table of contents
        listed, merged ones included).  When `keep_going()` turns false, the chunks not
        started are dropped and the workers write what they have.  Returns once every
        worker wrote its last segment."""
        done = Pass()
        queued = iter(jobs)  # handed out as workers free up: the queue holds a few at a time
        waiting = self._put(itertools.islice(queued, QUEUED_PER_WORKER * self.count))
        stopping = flushing = False
        flushed = 0
        listed = time.monotonic()
        while flushed < self.count:
            if not stopping and not keep_going():
                stopping = True
                waiting -= self._drop()
            if waiting == 0 and more is not None:
                waiting += self._put(() if stopping else more(done))
                more = None
            if waiting == 0 and not flushing:
                flushing = True
                for control in self._controls:
                    control.put("flush")
            message = self._next()
            if message is None:
                pass
            elif message[0] == "segment":
                _, _, segment, keys = message
                received(contents.add(segment, keys))
            elif message[0] == "merged":
                _, _, group, merged = message
                contents.swap(group, merged)
            elif message[0] == "done":
                _, _, chunk, indexed, skipped, report = message
                waiting -= 1
                if not stopping:
                    waiting += self._put(itertools.islice(queued, 1))
                done.indexed += indexed
                done.skipped += skipped
                done.chunks[chunk] = report
                if progress is not None:
                    progress(done)
            elif message[0] == "flushed":
                flushed += 1
            elif message[0] == "error":
                raise RuntimeError(f"index worker failed: {message[2]}")
            if contents.unlisted and time.monotonic() - listed >= COMMIT_SECONDS:
                self._commit(contents, committed)
                listed = time.monotonic()
        if contents.unlisted:
            self._commit(contents, committed)
        return done

    @staticmethod
    def _commit(contents: Contents, committed: Callable[[list[Fresh]], None]) -> None:
        new = list(contents.unlisted)
        contents.write()
        committed(new)

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
        for control in self._controls:
            control.put(None)
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        for control in self._controls:
            control.close()
        self._jobs.close()
        self._results.close()


# -- the catch-up after a crawl ------------------------------------------------------------


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


def drain(
    ix: Any,
    spool: Spool,
    workers: Workers,
    after: int,
    keep_going: Callable[[], bool],
) -> tuple[int, int]:
    """Index every spooled row after `after` with the workers, in chunks of ROWS_PER_CHUNK
    rows taken as workers free up; returns (indexed, last row): every row up to it is in
    the index (or was replaced by a later row of its URL)."""
    indexed = 0
    while keep_going():
        last = spool.last_id()
        if last is None or last <= after:
            break
        done, handled = _drain_rows(ix, spool, workers, after, last, keep_going)
        indexed += done
        if not handled:
            first = spool.first_after(after)
            return indexed, (first - 1) if first is not None else last
        after = last
    return indexed, after


def _drain_rows(
    ix: Any, spool: Spool, workers: Workers, after: int, last: int, keep_going: Callable[[], bool]
) -> tuple[int, bool]:
    """Index the rows after `after` up to `last` (the newest row of each URL; the older
    ones are deleted with it).  The parent holds the chunks handed out and the few URLs
    spooled twice, not the backlog: its ids and URLs are read from the spool as needed."""
    older = {url: ids[:-1] for url, ids in spool.repeated(after, last).items()}
    replaced = {row_id for ids in older.values() for row_id in ids}
    contents = Contents(ix)
    stopped = False

    def received(fresh: Fresh) -> None:
        contents.delete_earlier(url for _, url in spool.urls_of(fresh.keys))

    def committed(listed: list[Fresh]) -> None:
        gone: list[int] = []
        for fresh in listed:
            gone += fresh.keys
            if older:
                for _, url in spool.urls_of(fresh.keys):
                    gone += older.get(url, ())
        spool.delete_ids(gone)

    def going() -> bool:
        nonlocal stopped
        stopped = stopped or not keep_going()
        return not stopped

    try:
        result = workers.run(contents, _chunks(spool, after, last, replaced), received, committed, going)
        contents.write(final=True)
    finally:
        contents.close()
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
    folder: str,
    spool_file: str,
    read_chunk: Callable[[tuple[Any, ...]], Any] | None,
    max_chars: int,
    number: int,
    sizes: tuple[float, int],
    jobs: Any,
    control: Any,
    results: Any,
    parent: int,
) -> None:
    """One worker: chunks from `jobs` until the parent says flush (write what is open) or
    stop (None)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides when to stop
    storage = _WorkerStorage(folder, supports_mmap=False)
    ix = storage.open_index(INDEX_NAME)
    spool = Spool(Path(spool_file)) if spool_file else None
    worker = _Worker(ix, number, results, max_chars, spool, read_chunk, *sizes)
    try:
        while True:
            try:
                job = jobs.get(timeout=0.1)
            except queue.Empty:
                try:
                    word = control.get_nowait()
                except queue.Empty:
                    if os.getppid() != parent:  # the writer was killed: nothing to hand back
                        return
                    continue
                if word is None:
                    return
                try:
                    worker.flush()
                except Exception as exc:
                    results.put(("error", number, f"{type(exc).__name__}: {exc}"))
                results.put(("flushed", number))
                continue
            try:
                worker.run(job)
            except Exception as exc:
                log.debug("index worker failed", exc_info=True)
                results.put(("error", number, f"{type(exc).__name__}: {exc}"))
    finally:
        worker.close()
        ix.close()


class _Worker:
    """One worker's open segment, the segments it wrote this pass, and its chunk readers."""

    def __init__(
        self,
        ix: Any,
        number: int,
        results: Any,
        max_chars: int,
        spool: Spool | None,
        read_chunk: Callable[[tuple[Any, ...]], Any] | None,
        segment_mb: float,
        per_tier: int,
    ) -> None:
        self.ix = ix
        self.segment_mb = segment_mb
        self.per_tier = per_tier
        self.number = number
        self.results = results
        self.max_chars = max_chars
        self.spool = spool
        self.read_chunk = read_chunk
        self.writer: Any = None
        self.keys: list[Any] = []
        self.mine: list[Any] = []
        self.merging = SimpleNamespace(storage=ix.storage, schema=ix.schema, indexname=INDEX_NAME)

    def run(self, job: tuple[Any, ...]) -> None:
        kind, chunk = job[0], job[1]
        if kind == "rows":
            assert self.spool is not None
            indexed, skipped = self.add_all(self.spool.rows_with_ids(job[2]))
            report: Any = None
        else:
            assert self.read_chunk is not None, f"no reader for {kind} jobs"
            found = self.read_chunk(job)
            indexed, skipped = self.add_all(found.captures())
            report = found.report()
        self.results.put(("done", self.number, chunk, indexed, skipped, report))

    def add_all(self, captures: Iterable[tuple[Any, Capture]]) -> tuple[int, int]:
        indexed = skipped = 0
        for key, capture in captures:
            try:
                document = make_document(capture, self.max_chars)
            except Exception as exc:  # one broken page must not stop the index
                log.warning("index: skipped %s: %s", capture.url, exc)
                skipped += 1
                continue
            if self.writer is not None and self.writer.full:
                self.finish()
            if self.writer is None:
                self.writer = SegmentBuilder(self.ix, self.segment_mb, _lk=False)
            self.writer.add_document(**document)
            self.keys.append(key)
            indexed += 1
        return indexed, skipped

    def finish(self) -> None:
        """Write the open segment, hand it over, merge a full tier of this worker's own."""
        if self.writer is None:
            return
        segment = self.writer._finalize_segment()
        self.writer._finish()
        self.writer = None
        self.results.put(("segment", self.number, segment, self.keys))
        self.keys = []
        self.mine.append(segment)
        while True:
            group = full_tier(self.mine, self.per_tier)  # the policy of `tiers.merge_tiers`
            if not group:
                return
            merged = merge_segments(self.merging, group)
            ids = [member.segment_id() for member in group]
            self.mine = [kept for kept in self.mine if kept.segment_id() not in ids]
            self.mine.append(merged)
            self.results.put(("merged", self.number, ids, merged))

    def flush(self) -> None:
        """The pass is over: write the open segment; the next pass starts its own tiers."""
        self.finish()
        self.mine = []

    def close(self) -> None:
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.cancel()
        if self.spool is not None:
            self.spool.close()
