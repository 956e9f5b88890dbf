"""A bound on the index's segment count: segments of one size tier merged into one of the next.

Segments are written when their postings fill the writer's memory (`segment.py`), a few
hundred pages each, and a crawl-time writer commits one every few seconds; whoosh keeps a
file open per segment while searching and scores them one by one.  So a segment's tier is
the order of magnitude (in `SEGMENTS_PER_TIER`) of its live documents, and whenever a tier
holds `SEGMENTS_PER_TIER` segments they become one segment of the next tier, as Lucene's
tiered merge does: at most `SEGMENTS_PER_TIER` segments a tier (a commit merges, then
adds its own segment), a few tiers for any archive, and each posting is rewritten once per
tier it climbs.

whoosh merges by sending every posting of the merged segments through its writer's pool,
which spills past its memory to pickled run files (the cost `segment.py` avoids).  But each
segment's postings are already sorted by field and term, and the documents of the later
segment follow those of the earlier one: the merged postings are the segments' streams
merged term by term and copied, a block of postings at a time, straight to the new
segment.  Memory holds a block of postings per segment and the new segment's field
lengths, not the postings.

`merge_tiers` is a whoosh merge policy (``writer.commit(mergetype=merge_tiers)``): the
merged segments and the commit's own are listed in the one table of contents the commit
writes, so a kill leaves either the old segments or the new ones (files no table of
contents lists are removed by the next commit), and deleted documents are dropped.
"""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from typing import Any

from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.index import FileIndex
from whoosh.reading import SegmentReader

from .segment import FieldLengths, SegmentBuilder

SEGMENTS_PER_TIER = 32
"""A tier holding this many segments is merged into one segment of the next tier.  A merge
costs about as much CPU as indexing its pages did, and each page is merged once per tier
it climbs: with ~270-page segments no page is merged below ~8,600 pages and once up to
~270,000, and an index of up to a million pages keeps at most 128 segments (whoosh opens a
file per segment when searching; the limit is often 1,024)."""


def tier(segment: Any) -> int:
    """The order of magnitude of the segment's live documents, in `SEGMENTS_PER_TIER`."""
    return int(math.log(max(segment.doc_count(), 1), SEGMENTS_PER_TIER))


def merge_tiers(writer: Any, segments: Sequence[Any]) -> list[Any]:
    """The `segments` with every full tier merged into one segment, tier by tier upwards
    (a merge may fill the next tier), and the segments without live documents dropped.
    Called with `writer` holding the index's lock."""
    kept = [segment for segment in segments if segment.doc_count() > 0]
    while True:
        tiers: dict[int, list[Any]] = {}
        for segment in kept:
            tiers.setdefault(tier(segment), []).append(segment)
        full = [level for level, members in tiers.items() if len(members) >= SEGMENTS_PER_TIER]
        if not full:
            return kept
        group = tiers[min(full)]
        merged = merge_segments(writer, group)
        kept = [segment for segment in kept if all(segment is not member for member in group)]
        kept.append(merged)


def merge_segments(writer: Any, group: Sequence[Any]) -> Any:
    """One new segment with the live documents of `group`, in their order."""
    ix = FileIndex(writer.storage, writer.schema, writer.indexname)
    builder = SegmentBuilder(ix, _lk=False)
    readers = [SegmentReader(writer.storage, writer.schema, segment) for segment in group]
    try:
        fieldnames = set(writer.schema.names())
        docmaps: list[dict[int, int]] = []
        for reader in readers:
            first = builder.docnum
            docmap = builder.write_per_doc(fieldnames | set(reader.indexed_field_names()), reader)
            docmaps.append(docmap or {n: first + n for n in range(reader.doc_count_all())})
        builder.perdocwriter.close()
        lengths = FieldLengths(builder.per_document_reader())
        try:
            _write_postings(builder.fieldwriter, writer.schema, lengths, readers, docmaps)
        finally:
            lengths.close()
        builder._added = True
        builder._close_segment()
        builder._assemble_segment()
        segment = builder.get_segment()
    except BaseException:
        builder._close_segment()
        raise
    finally:
        for reader in readers:
            reader.close()
        builder.is_closed = True  # its temporary folder is the committing writer's: kept
    return segment


def _write_postings(
    fieldwriter: Any, schema: Any, lengths: FieldLengths, readers: Sequence[Any], docmaps: Sequence[Any]
) -> None:
    """Every term of the `readers` in order; a term's postings segment after segment, so
    their new document numbers ascend."""
    terms = heapq.merge(*(_terms(reader, number) for number, reader in enumerate(readers)))
    field = None
    length = lengths.doc_field_length
    for (fieldname, text), holders in itertools.groupby(terms, key=operator.itemgetter(0, 1)):
        if fieldname not in schema:
            continue
        if fieldname != field:
            if field is not None:
                fieldwriter.finish_field()
            field = fieldname
            fieldwriter.start_field(fieldname, schema[fieldname])
        add = fieldwriter.add
        format_ = schema[fieldname].format
        started = False  # a term whose documents were all deleted is left out
        for _, _, number, terminfo in holders:
            docmap = docmaps[number]
            for docnum, weight, value in _postings(readers[number], terminfo, format_):
                new = docmap.get(docnum)
                if new is not None:  # None: a deleted document
                    if not started:
                        fieldwriter.start_term(text)
                        started = True
                    add(new, weight, value, length(new, fieldname))
        if started:
            fieldwriter.finish_term()
    if field is not None:
        fieldwriter.finish_field()


def _terms(reader: Any, number: int) -> Iterator[tuple[str, bytes, int, Any]]:
    """The segment's terms in order, with where their postings are (one pass of its term
    index, not a look-up per term)."""
    for (fieldname, text), terminfo in reader._terms.items():
        yield fieldname, text, number, terminfo


def _postings(reader: Any, terminfo: Any, format_: Any) -> Iterator[tuple[int, float, bytes]]:
    """A term's (document, weight, value) postings, deleted documents included, a block of
    whoosh's posting file at a time (one call per posting costs as much as writing it)."""
    if terminfo.is_inlined():
        ids, weights, values = terminfo.inlined_postings()
        yield from zip(ids, weights, (b"" if value is None else value for value in values), strict=True)
        return
    offset, length = terminfo.extent()
    matcher = W3LeafMatcher(reader._terms._postfile, offset, length, format_)
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        matcher._read_values()
        values = matcher._values if matcher._fixedsize != 0 else (b"",) * matcher._blocklength
        yield from zip(matcher._ids, matcher._weights, values, strict=True)
        matcher._next_block()
