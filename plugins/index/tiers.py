"""A bound on the index's segment count: segments of one size tier merged into one of the next.

Segments are written when their postings fill the writer's memory (`segment.py`), a few
hundred pages each, and a crawl-time writer commits one every few seconds; whoosh keeps a
file open per segment while searching and scores them one by one.  So a segment's tier is
the order of magnitude (in `SEGMENTS_PER_TIER`) of its live documents, and whenever a tier
holds `SEGMENTS_PER_TIER` segments they become one segment of the next tier, as Lucene's
tiered merge does: ~270-page segments become ~8,600-page ones.  Segments of `TOP_TIER`
(1,024 documents and more) are one wider tier, merged only when it holds `TOP_SEGMENTS`,
and then its `SEGMENTS_PER_TIER` smallest (Lucene bounds its merges by a largest merged
segment the same way): up to ~1,100,000 pages no page is merged a second time, where a
tier of 32 ~8,600-page segments merged every page of 276,000 again (~225 s of a
300,000-page crawl's wall time; at a million pages three such merges).  A merge never
takes more than `SEGMENTS_PER_TIER` segments: its memory holds two `CHUNK` buffers each.

The price is paid at search time: a query looks its terms up and matches them in every
segment, so a million pages are ~116 segments of ~8,600 pages (up to 62 smaller ones
beside) where 32 a tier kept ~3 of ~276,000 and ~20 of ~8,600.  `bench/bench_segments.py`
measures it: opening the index costs ~0.8 ms of CPU a segment (~75 ms more for the first
query of an `archiver search` at a million pages), while a query of a process that keeps
the index open was not slower over 32 segments than over 8 or 1 (docs/performance.md, "A
page merged once up to a million pages").

whoosh merges by sending every posting of the merged segments through its writer's pool,
which spills past its memory to pickled run files (the cost `segment.py` avoids).  But each
segment's postings are already sorted by field and term, and the documents of the later
segment follow those of the earlier one: the merged postings are the segments' streams
merged term by term and copied, a block of postings at a time, straight to the new
segment (`blocks.FieldWriter.add_terms`).  Memory holds a term's postings and the new
segment's field lengths.

`merge_tiers` is a whoosh merge policy (``writer.commit(mergetype=merge_tiers)``): the
merged segments and the commit's own are listed in the one table of contents the commit
writes, so a kill leaves either the old segments or the new ones (files no table of
contents lists are removed by the next commit), and deleted documents are dropped.
"""

from __future__ import annotations

import heapq
import io
import itertools
import math
import operator
import pickle
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3TermInfo
from whoosh.filedb.filetables import _lengths as _LENGTHS
from whoosh.formats import Positions
from whoosh.index import FileIndex
from whoosh.reading import SegmentReader
from whoosh.system import unpack_uint

from .blocks import LEVEL, CompactTermsReader
from .positions import from_whoosh, split
from .positions import size as body_bytes
from .postblocks import COUNTS, POSITIONS, RAW, Data, Spliced, block_sections, decode_head, value_kind
from .segment import FieldLengths, SegmentBuilder
from .terminfo import CompactInfo as _CompactInfo
from .terminfo import decode as decode_info

SEGMENTS_PER_TIER = 32
"""A tier below `TOP_TIER` holding this many segments is merged into one segment of the
next tier; `TOP_TIER` merges this many at a time.  A merge costs about as much CPU as
indexing its pages did, and the memory of one holds two `CHUNK` buffers a segment."""

TOP_TIER = 2
"""Segments of at least `SEGMENTS_PER_TIER` ** 2 (1,024) live documents, the ~8,600-page
segments a first-level merge makes and anything larger, are one tier: merged only once it
holds `TOP_SEGMENTS`."""

TOP_SEGMENTS = 128
"""`TOP_TIER` holding this many segments merges its `SEGMENTS_PER_TIER` smallest into one.
128 segments of ~8,600 pages are ~1,100,000 pages: up to that no page is merged a second
time, where 32 a tier merged every page of ~276,000 again (~225 s of a 300,000-page
crawl's 781 s).  The price is at search time: up to ~180 segments at a million pages
(31 below 32 pages, 31 below 1,024 and ~116 of the top tier) where 32 a tier kept up to ~65,
each one's files mapped, its terms looked up and matched (see the module's docstring)."""


CHUNK = 1 << 18
"""Bytes of a segment's term index, and of its posting file, read at once while merging: a
merge of a full tier holds two such buffers for each of its `SEGMENTS_PER_TIER` segments
(1 MiB buffers took the merging writer from 46 to 65 MB)."""
LISTED_POSTINGS = 1 << 16
"""A term's postings gathered by a merge (`Spliced`) are kept in lists up to this many
(~2.4 MB), then in arrays: arrays throughout cost a full tier's merge 7% more CPU."""
_FIELD = struct.Struct("!H")
_EXTENT = struct.Struct("!qi")
_INFO_SIZE = W3TermInfo._struct.size
_BLOCK = struct.Struct("!i")


def tier(segment: Any, per_tier: int | None = None) -> int:
    """The order of magnitude of the segment's live documents, in `per_tier`
    (`SEGMENTS_PER_TIER` unless given)."""
    return int(math.log(max(segment.doc_count(), 1), per_tier or SEGMENTS_PER_TIER))


def merge_tiers(writer: Any, segments: Sequence[Any]) -> list[Any]:
    """The `segments` with every full tier merged, tier by tier upwards (a merge may fill
    the next tier), and the segments without live documents dropped.  Called with
    `writer` holding the index's lock."""
    kept = [segment for segment in segments if segment.doc_count() > 0]
    while True:
        group = full_tier(kept)
        if not group:
            return kept
        merged = merge_segments(writer, group)
        kept = [segment for segment in kept if all(segment is not member for member in group)]
        kept.append(merged)


def full_tier(segments: Sequence[Any], per_tier: int | None = None) -> list[Any]:
    """The segments to merge next: `per_tier` (`SEGMENTS_PER_TIER` unless given) of the
    lowest full tier (of `TOP_TIER`, its smallest, the oldest first among equals), none
    when no tier is full."""
    per_tier = per_tier or SEGMENTS_PER_TIER
    tiers: dict[int, list[Any]] = {}
    for segment in segments:
        tiers.setdefault(min(tier(segment, per_tier), TOP_TIER), []).append(segment)
    for level in sorted(tiers):
        members = tiers[level]
        if level < TOP_TIER and len(members) >= per_tier:
            return members[:per_tier]
        if level == TOP_TIER and len(members) >= TOP_SEGMENTS:
            return sorted(members, key=lambda segment: segment.doc_count())[:per_tier]
    return []


def merge_segments(writer: Any, group: Sequence[Any]) -> Any:
    """One new segment with the live documents of `group`, in their order."""
    ix = FileIndex(writer.storage, writer.schema, writer.indexname)
    builder = SegmentBuilder(ix, _lk=False)
    readers = [SegmentReader(writer.storage, writer.schema, segment) for segment in group]
    try:
        fieldnames = set(writer.schema.names())
        docmaps: list[dict[int, int] | int] = []
        for reader in readers:
            first = builder.docnum
            docmap = builder.write_per_doc(fieldnames | set(reader.indexed_field_names()), reader)
            docmaps.append(first if docmap is None else docmap)
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
    """Every term of the `readers` in order, a field at a time; a term's postings segment
    after segment, so their new document numbers ascend."""
    terms = heapq.merge(*(_terms(reader, number) for number, reader in enumerate(readers)))
    files = [_Postings(reader._terms._postfile) for reader in readers]
    for fieldname, held in itertools.groupby(terms, key=operator.itemgetter(0)):
        if fieldname not in schema:
            continue
        field = schema[fieldname]
        postings = _field_postings(held, field.format, readers, files, docmaps)
        packed = type(field.format) is Positions  # `_blocks` gives positions packed
        fieldwriter.add_terms(fieldname, field, postings, lengths.length_bytes(fieldname), LEVEL, packed)


def _field_postings(
    terms: Iterator[tuple[str, bytes, int, Any]],
    format_: Any,
    readers: Sequence[Any],
    files: Sequence[_Postings],
    docmaps: Sequence[Any],
) -> Iterator[tuple[bytes, Any]]:
    """(term, its postings) for one field's terms: `Spliced` where every merged segment
    is of the compact codec and keeps the term's documents in a row (`_spliced`), else
    [document, weight, value, ...]; a term whose documents were all deleted is left out."""
    kind = value_kind(format_)
    if kind == RAW and format_ is not None and format_.fixed_value_size() != 0:
        kind = -1  # values of their own: decoded posting by posting
    for text, group in itertools.groupby(terms, key=operator.itemgetter(1)):
        holders = list(group)
        spliced = _spliced(holders, kind, files, docmaps) if kind >= 0 else None
        if spliced is not None:
            if spliced.ids:  # else every document of the term was deleted
                yield text, spliced
            continue
        flat: list[Any] = []
        for _, _, number, where in holders:
            docmap = docmaps[number]
            if type(where) is _CompactInfo and not where.is_inlined():
                where = (where._offset, where._length)
            for ids, weights, values in _blocks(readers[number], where, format_):
                if isinstance(docmap, int):  # no deleted documents: numbers shifted
                    flat += itertools.chain.from_iterable(
                        zip(map(operator.add, ids, itertools.repeat(docmap)), weights, values, strict=True)
                    )
                    continue
                for docnum, weight, value in zip(ids, weights, values, strict=True):
                    new = docmap.get(docnum)
                    if new is not None:  # None: a deleted document
                        flat += (new, weight, value)
        if flat:
            yield text, flat


def _spliced(
    holders: list[tuple[str, bytes, int, Any]],
    kind: int,
    postings: Sequence[_Postings],
    docmaps: Sequence[Any],
) -> Spliced | None:
    """A term's postings as `Spliced`, its blocks' sections copied (a block holding a
    deleted document filtered posting by posting); None unless each merged segment is of
    the compact codec and weighs each posting by its count."""
    spliced = Spliced()
    ids, heads, bodies = spliced.ids, spliced.heads, spliced.bodies
    for _, _, number, info in holders:
        if type(info) is not _CompactInfo:
            return None
        docmap = docmaps[number]
        shift: int | None
        if isinstance(docmap, int):
            shift = docmap
        else:
            first, last = docmap.get(info._minid), docmap.get(info._maxid)
            in_row = first is not None and last is not None and last - first == info._maxid - info._minid
            shift = first - info._minid if in_row else None
        total = info._weight
        if info._inlined is not None:
            if len(info._inlined[0]) != 1:
                return None
            (docnum,), _, (value,) = info._inlined
            if kind == POSITIONS:
                head, body = split(from_whoosh(value))
            elif kind == COUNTS:
                head, body = unpack_uint(value[:4])[0], b""
            else:
                head, body = 1, b""
            if total != (head >> 2 if kind == POSITIONS else head):
                return None
            new = docnum + shift if shift is not None else docmap.get(docnum)
            if new is not None:  # None: a deleted document
                spliced.total += total
                ids.append(new)
                bodies += body
                if kind != RAW:
                    heads.append(head)
            continue
        raw, at = postings[number].get(info._offset, info._length)
        end = at + info._length
        previous = 0
        while at < end:
            found = block_sections(raw, at, previous, kind, shift or 0)
            if found is None:
                return None
            block_ids, block_heads, block_bodies, at = found
            if shift is None:
                previous = block_ids[-1]
                block_ids, block_heads, block_bodies, dropped = _kept(
                    block_ids, block_heads, block_bodies, docmap, kind
                )
                total -= dropped
            else:
                previous = block_ids[-1] - shift
            ids.extend(block_ids)
            heads.extend(block_heads)
            bodies += block_bodies
        spliced.total += total
        if len(ids) > LISTED_POSTINGS and type(ids) is list:
            spliced.to_arrays()
            ids, heads = spliced.ids, spliced.heads
    return spliced


def _kept(
    ids: list[int], heads: list[int], bodies: bytes, docmap: dict[int, int], kind: int
) -> tuple[list[int], list[int], bytes, int]:
    """A block's sections less its deleted documents' postings, its ids renumbered by
    `docmap`: (ids, heads, positions' bytes, the weight dropped)."""
    new = list(map(docmap.get, ids))
    if None not in new:
        return new, heads, bodies, 0  # type: ignore[return-value]
    kept_ids: list[int] = []
    kept_heads: list[int] = []
    kept_bodies: list[bytes] = []
    dropped = 0
    at = 0
    for docnum, head in itertools.zip_longest(new, heads, fillvalue=1):
        end = at + body_bytes(head) if kind == POSITIONS else at
        if docnum is None:
            dropped += head >> 2 if kind == POSITIONS else head
        else:
            kept_ids.append(docnum)
            kept_heads.append(head)
            kept_bodies.append(bodies[at:end])
        at = end
    return kept_ids, kept_heads if kind != RAW else [], b"".join(kept_bodies), dropped


class _Postings:
    """A segment's posting file read `CHUNK` bytes at a time: a merge reads the terms'
    postings in the order they were written."""

    def __init__(self, postfile: Any) -> None:
        self._postfile = postfile
        self._buffer = b""
        self._start = 0

    def get(self, offset: int, length: int) -> tuple[bytes, int]:
        """(bytes holding the `length` bytes at `offset`, where they start in them)."""
        at = offset - self._start
        if at < 0 or at + length > len(self._buffer):
            self._buffer = self._postfile.get(offset, max(CHUNK, length))
            self._start = offset
            at = 0
        return self._buffer, at


def _terms(reader: Any, number: int) -> Iterator[tuple[str, bytes, int, tuple[int, int] | Any]]:
    """The segment's terms in order, with where their postings are: (field, term, `number`,
    (offset, length) in the posting file, or the term info of inlined postings).  The term
    index is read `CHUNK` bytes at a time and its records parsed here: read record by
    record through whoosh's compound file, it cost more than the merge's writing."""
    terms = reader._terms
    if isinstance(terms, CompactTermsReader):
        yield from _compact_terms(terms, number)
        return
    tindex = terms._tindex
    unmap = terms._fieldunmap
    dbfile = tindex.dbfile
    pos, end = tindex.startofdata, tindex.endofdata
    heads = _LENGTHS.size
    buffer = b""
    start = 0
    while pos < end or start < len(buffer):
        if len(buffer) - start < heads or len(buffer) - start < heads + sum(
            _LENGTHS.unpack_from(buffer, start)
        ):
            if pos >= end:
                raise ValueError("term index cut short")
            size = min(CHUNK, end - pos)
            buffer = buffer[start:] + dbfile.get(pos, size)
            pos += size
            start = 0
            continue
        keylen, datalen = _LENGTHS.unpack_from(buffer, start)
        key = buffer[start + heads : start + heads + keylen]
        value = buffer[start + heads + keylen : start + heads + keylen + datalen]
        start += heads + keylen + datalen
        (fieldid,) = _FIELD.unpack_from(key)
        if value[0]:  # postings inlined in the term info
            where: Any = W3TermInfo.from_bytes(value)
        else:
            where = _EXTENT.unpack_from(value, _INFO_SIZE)
        yield unmap[fieldid], key[_FIELD.size :], number, where


def _compact_terms(terms: CompactTermsReader, number: int) -> Iterator[tuple[str, bytes, int, Any]]:
    """`_terms` of a segment of the compact codec."""
    unmap = terms._fieldunmap
    for key, value in terms._tindex.items():
        (fieldid,) = _FIELD.unpack_from(key)
        yield unmap[fieldid], key[_FIELD.size :], number, decode_info(value)


def _compact_blocks(reader: Any, where: tuple[int, int], format_: Any) -> Iterator[tuple[Any, Any, Any]]:
    """`_blocks` of a term of the compact codec."""
    offset, length = where
    raw = reader._terms._postfile.get(offset, length)
    at = 0
    previous = 0
    while at < length:
        head, start, size = decode_head(raw, at, previous)
        data = Data(head, raw[start : start + size], format_)
        yield data.ids, data.weights, data.packed_values()
        previous = head["maxid"]
        at = start + size


def _blocks(reader: Any, where: Any, format_: Any) -> Iterator[tuple[Any, Any, Any]]:
    """A term's postings as (ids, weights, values) a block at a time, deleted documents
    included; a `Positions` field's values packed (`positions.py`), any other's as whoosh's
    format reads them."""
    if isinstance(where, tuple) and isinstance(reader._terms, CompactTermsReader):
        yield from _compact_blocks(reader, where, format_)
        return
    found = _whoosh_blocks(reader, where, format_)
    if type(format_) is not Positions:
        yield from found
        return
    for ids, weights, values in found:
        yield ids, weights, tuple(from_whoosh(value) if value else value for value in values)


def _whoosh_blocks(reader: Any, where: Any, format_: Any) -> Iterator[tuple[Any, Any, Any]]:
    """`_blocks` of inlined postings or whoosh 3's blocks, decoded as `W3LeafMatcher`
    decodes them from the term's postings read at once."""
    if not isinstance(where, tuple):
        ids, weights, values = where.inlined_postings()
        if weights is None:  # all 1.0
            weights = (1.0,) * len(ids)
        yield ids, weights, tuple(b"" if value is None else value for value in values)
        return
    offset, length = where
    raw = reader._terms._postfile.get(offset, length)
    if raw[:4] != WHOOSH3_HEADER_MAGIC:
        raise ValueError(f"posting block tag {raw[:4]!r}")
    fixed = format_.fixed_value_size()
    stream = io.BytesIO(raw)
    position = 4
    while True:
        (size,) = _BLOCK.unpack_from(raw, position)
        stream.seek(position + 4)
        info = pickle.load(stream)
        position += 4 + abs(size)
        data = raw[stream.tell() : position]
        if info[3]:
            data = zlib.decompress(data)
        deltas, weights, values = pickle.loads(data)
        count = info[0]
        if weights is None:
            weights = (1.0,) * count
        elif isinstance(weights, float):
            weights = (weights,) * count
        if fixed is None or fixed < 0:
            pass
        elif fixed == 0:
            values = (b"",) * count
        else:
            values = tuple(values[i : i + fixed] for i in range(0, len(values), fixed))
        yield tuple(itertools.accumulate(deltas)), weights, values
        if size < 0:
            return
