"""The index of a merged archive, made of its sources' indexes without analysing a page again.

A whoosh segment is a set of files that never change once written (deletions are kept
in the table of contents), so the merged index is the sources' segment files copied
into one folder and listed in one table of contents.  A URL that more than one source
indexed keeps its newest capture (on equal times, the later source's).  Then the merged
index is checked against the merged WARC files, as on resume, so a page a killed worker
archived but never indexed is indexed now.
"""

from __future__ import annotations

import collections
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from whoosh.writing import NO_MERGE

from archiver.api import ArchiveError

from .parallel import commit_segments
from .store import DAMAGE_ERRORS, WriterLock, create_index, open_index, whoosh_dir

log = logging.getLogger("archiver.index")


def source_indexes(sources: Sequence[Path]) -> list[Any] | None:
    """Every source's index, opened; None when one is missing or damaged (then rebuild)."""
    opened: list[Any] = []
    for source in sources:
        try:
            opened.append(open_index(source, mapped=False))
        except ArchiveError:
            for ix in opened:
                ix.close()
            return None
    return opened


def merge_indexes(archive: Path, sources: Sequence[Path]) -> int | None:
    """Build `archive`'s index from its sources' segments; returns its document count, or
    None when a source has no usable index (the caller rebuilds from the WARC files)."""
    from .recover import bring_in_line
    from .reindex import _clear_spool, _swap, catch_up, whoosh_dir_of

    indexes = source_indexes(sources)
    if indexes is None:
        return None
    with WriterLock(archive):
        target = whoosh_dir(archive)
        building = target.with_name(target.name + ".new")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        try:
            ix = create_index(building, indexes[0].schema)
            segments = []
            for source in indexes:
                for segment in source._segments():
                    for name in segment.list_files(source.storage):
                        shutil.copyfile(whoosh_dir_of(source) / name, building / name)
                    segments.append(segment)
            commit_segments(ix, segments, ())
            _keep_newest(ix)
            ix.close()
        except (*DAMAGE_ERRORS, OSError) as exc:
            log.warning("merge: cannot reuse the workers' indexes (%s); rebuilding from the WARC files", exc)
            shutil.rmtree(building, ignore_errors=True)
            return None
        finally:
            for source in indexes:
                source.close()
        _swap(building, target)
        _clear_spool(archive)
    if bring_in_line(archive):
        catch_up(archive)
    ix = open_index(archive, mapped=False)
    try:
        lacking = _lacking(ix, archive)
        if lacking:
            log.warning("merge: the joined index lacks %s; rebuilding from the WARC files", lacking)
            return None
        return int(ix.doc_count())
    finally:
        ix.close()


def _lacking(ix: Any, archive: Path) -> str | None:
    """The first indexable page of the WARC files that no live document of `ix` holds at its
    newest capture time, or None: the joined index must answer as a rebuild would."""
    from .recover import newest_indexable

    with ix.searcher() as searcher:
        for url, capture in newest_indexable(archive).items():
            if capture.is_revisit:
                continue  # its media type is in its record: a rebuild may not index it either
            times = [
                str(searcher.stored_fields(n).get("time", "")) for n in searcher.document_numbers(url=url)
            ]
            if not times or max(times) < capture.timestamp:
                return url
    return None


def _keep_newest(ix: Any) -> None:
    """Delete all but the newest document of every URL indexed more than once."""
    with ix.searcher() as searcher:
        reader = searcher.reader()
        counts = collections.Counter(
            term.decode("utf-8") for term in reader.lexicon("url") if reader.doc_frequency("url", term) > 1
        )
        stale: list[int] = []
        for url in counts:
            docnums = sorted(searcher.document_numbers(url=url))
            ranked = sorted(docnums, key=lambda n: (str(searcher.stored_fields(n).get("time", "")), n))
            stale += ranked[:-1]
    if not stale:
        return
    writer = ix.writer(timeout=30.0)
    for docnum in stale:
        writer.delete_document(docnum)
    writer.commit(mergetype=NO_MERGE)
