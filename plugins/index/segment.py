"""whoosh's segment writer with the postings kept compactly and written a term at a time.

whoosh's `SegmentWriter` makes a 5-tuple per posting in a pool (which pickles them to run
files past its size), sorts them all, and writes them one call per posting, with a
column read per posting for its document's field length: on the bench pages that was
most of the index's CPU.  A `SegmentBuilder` keeps a segment's postings by field and term
(`postings.py`: the text fields analyzed straight into positions), knows each document's
length bytes, and writes each term's postings in a few calls through the compact codec
(`blocks.py`); stored fields go through whoosh's per-document writer with a cheaper
pickle (`stored.py`).  The segments name that codec: whoosh reads, searches and merges
them through its reader (`tests/test_index_builder.py` compares them with what whoosh's
own writer makes, posting by posting).

It is `full` when its postings reach the memory it was given (~800 bench pages for
`WRITER_MEMORY_MB`), and its owner starts a new segment then.  A schema with term vectors
or separate spelling words takes whoosh's own path (its pool, then the field writer's
term-by-term calls), with `FieldLengths` reading each field's length column once; the
term vectors are whoosh's posting blocks, those of few postings left uncompressed (zlib
does not make a rare word's one or two postings smaller, at a fixed cost per call; each
block says whether it is compressed, so any whoosh reads them).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from whoosh.codec.whoosh3 import W3PostingsWriter, W3Segment
from whoosh.util.numeric import length_to_byte
from whoosh.writing import SegmentWriter

from .blocks import LEVEL, Codec
from .postings import Postings
from .store import WRITER_MEMORY_MB
from .stored import PerDocWriter

HEADROOM = 1.5
"""whoosh's pool (its own path) spills only past this many times `WRITER_MEMORY_MB`: room
for the page that fills a segment (a page of `max_chars` text adds a few MB of postings)."""
COMPRESSED_BLOCK = 8
"""Term vector blocks of fewer postings are written uncompressed (most hold a rare
word's one or two postings, which zlib does not make smaller)."""


class SegmentBuilder(SegmentWriter):  # type: ignore[misc]
    def __init__(self, ix: Any, memory_mb: float = WRITER_MEMORY_MB, **kwargs: Any) -> None:
        super().__init__(ix, limitmb=memory_mb * HEADROOM, codec=_Codec(), **kwargs)
        self._full_at = memory_mb * 1024 * 1024
        schema = self.schema
        self._postings: Postings | None = None
        if not any(field.vector or field.separate_spelling() for _, field in schema.items()):
            self._postings = Postings(schema)

    @property
    def full(self) -> bool:
        """The postings held reach the memory the segment was given: time to write it."""
        if self._postings is not None:
            return self._postings.size >= self._full_at
        return bool(self.pool.currentsize >= self._full_at)

    def update_document(self, **fields: Any) -> None:
        """whoosh's `update_document`: the first live document of each unique field's value
        deleted, then `fields` added; found by a term look-up in each segment rather than a
        query run through a searcher (which cost as much as indexing a small page)."""
        self._check_state()
        unique = self._unique_fields(fields)
        if unique:
            leaves = self.searcher().reader().leaf_readers()
            for name in unique:
                term = (name, fields[name])
                for reader, base in leaves:
                    if term in reader:
                        first = next(iter(reader.postings(*term).all_ids()), None)
                        if first is not None:
                            self.delete_document(base + first)
                            break
        self.add_document(**fields)

    def add_document(self, **fields: Any) -> None:
        """whoosh's `add_document`, the postings kept in `Postings` rather than the pool
        (a schema with term vectors or separate spelling words takes whoosh's path)."""
        postings = self._postings
        if postings is None:
            super().add_document(**fields)
            return
        self._check_state()
        schema = self.schema
        docboost = self._doc_boost(fields)
        names = sorted(name for name in fields if not name.startswith("_"))
        self._check_fields(schema, names)
        analyzed = []
        for name in names:
            value = fields[name]
            if value is None:
                continue
            field = schema[name]
            found: Any = None
            length = 0
            if field.indexed:
                found, length = postings.analyze(
                    name, field, value, self._field_boost(fields, name, docboost)
                )
            analyzed.append((name, field, value, found, length))
        docnum = self.docnum
        perdoc = self.perdocwriter
        perdoc.start_doc(docnum)
        try:
            for name, field, value, _, length in analyzed:
                stored = fields.get(f"_stored_{name}", value)
                perdoc.add_field(name, field, stored if field.stored else None, length)
                column = field.column_type
                if column and stored is not None:
                    perdoc.add_column_value(name, column, field.to_column_value(stored))
        except Exception:
            perdoc.cancel_doc()
            raise
        perdoc.finish_doc()
        for name, _, _, found, length in analyzed:
            if found:
                postings.add(name, docnum, found)
                if length:
                    postings.add_length(name, docnum, length)
        self._added = True
        self.docnum += 1

    def _flush_segment(self) -> None:
        if self._postings is not None:
            self.perdocwriter.close()
            self._postings.write(self.fieldwriter, self.schema, self.docnum, LEVEL)
            self._postings = None
            self.fieldwriter.close()
            return
        self.perdocwriter.close()
        lengths = FieldLengths(self.per_document_reader()) if self.codec.length_stats else None
        self.fieldwriter.add_postings(self.schema, lengths, self.pool.iter_postings())
        self.fieldwriter.close()
        if lengths is not None:
            lengths.close()


class FieldLengths:
    """A per-document reader's `doc_field_length`, each field's column read once."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._count = reader.doc_count_all()
        self._tables: dict[str, Sequence[int]] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> Any:
        return self._table(fieldname, default)[docnum]

    def length_bytes(self, fieldname: str) -> bytes:
        """Each document's length byte in the field (0: none), as its column holds them;
        the field's lengths are not kept besides (a merge of ~276,000 pages needs only the
        bytes)."""
        lengths: Iterable[Any] | None = self._tables.get(fieldname)
        if lengths is None:
            read = self._reader.doc_field_length
            lengths = (read(docnum, fieldname, 0) for docnum in range(self._count))
        return bytes(length_to_byte(length) if length else 0 for length in lengths)

    def _table(self, fieldname: str, default: int) -> Sequence[int]:
        table = self._tables.get(fieldname)
        if table is None:
            read = self._reader.doc_field_length
            # an array, not a list: at a tier's merge of ~270,000 pages a list of ints per field
            # took tens of megabytes of the writer's memory
            try:
                table = array("I", (read(d, fieldname, default) for d in range(self._count)))
            except TypeError:  # a field without lengths answers its default, None for some callers
                table = [read(d, fieldname, default) for d in range(self._count)]
            self._tables[fieldname] = table
        return table

    def close(self) -> None:
        self._reader.close()


class _Codec(Codec):
    def per_document_writer(self, storage: Any, segment: Any) -> Any:
        return PerDocWriter(self, storage, segment)

    def postings_writer(self, dbfile: Any, byteids: bool = False) -> Any:
        return _PostingsWriter(
            dbfile,
            blocklimit=self._blocklimit,
            byteids=byteids,
            compression=self._compression,
            inlinelimit=self._inlinelimit,
        )

    def new_segment(self, storage: Any, indexname: str) -> Any:
        return W3Segment(Codec(), indexname)


class _PostingsWriter(W3PostingsWriter):  # type: ignore[misc]
    def __init__(self, *args: Any, compression: int = 3, **kwargs: Any) -> None:
        super().__init__(*args, compression=compression, **kwargs)
        self._level = compression

    def _write_block(self, last: bool = False) -> None:
        self._compression = self._level if len(self._ids) >= COMPRESSED_BLOCK else 0
        super()._write_block(last)
