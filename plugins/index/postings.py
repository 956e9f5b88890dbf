"""A segment's postings held in memory, term by term, until the segment is written.

whoosh's writer turns every posting into a 5-tuple (field, term, document, weight, value)
in its pool, estimates its size, sorts all of them, and hands them to its posting writer
one call per posting: per posting that is most of whoosh's indexing time, and over 100
bytes of memory.  Here each field has a table of term -> flat list (document, weight,
value, document, weight, value...), appended in document order, so the postings are
sorted once the terms are: ~45 bytes a posting on the bench pages (its share of the terms
and values included), a look-up and an append to add one, and slices to write a term's
blocks (`blocks.py`).

The text fields are analyzed by `OnePassAnalyzer.positions` straight into term ->
positions, and the values encoded as the compact codec's blocks keep them (`Positions`:
packed, `positions.py`) or as whoosh's formats read them
(`Frequency`: the count).  A value of one position or a
count is the same bytes for every posting that has it: one object is shared (a block's
pickle then refers to it again instead of repeating it; whoosh reads the same bytes).
Other fields and formats go through whoosh's `field.index`, whose postings are the same.
"""

from __future__ import annotations

from operator import sub
from typing import Any

from whoosh.formats import Frequency, Positions
from whoosh.system import pack_uint
from whoosh.util.numeric import length_to_byte

from .positions import from_whoosh, pack
from .schema import OnePassAnalyzer

POSITIONS, FREQUENCY, GENERIC = 0, 1, 2
"""How a field's postings are made: positions or counts from `OnePassAnalyzer.positions`,
or whoosh's `field.index` (any field type and format)."""

_WEIGHTS = tuple(float(n) for n in range(1024))
_COUNTS = tuple(pack_uint(n) for n in range(1024))
SHARED_POSITIONS = 1 << 16
"""Values of one position below this are made once and shared (~60 bytes each)."""

TERM_BYTES = 260
"""Memory of a new term: its text, a dictionary slot and its list (measured: RSS over terms)."""
POSTING_BYTES = 32
"""Memory of one more posting: three pointers and the list's spare room."""
VALUE_BYTES = 40
"""Memory of a value of its own (a bytes object), besides its length."""


def kind(field: Any) -> int:
    """How `field`'s postings are made when its value is a string and it has no boost."""
    analyzer = getattr(field, "analyzer", None)
    format_ = field.format
    if (
        isinstance(analyzer, OnePassAnalyzer)
        and analyzer.indexes_in_one_pass
        and format_ is not None
        and format_.field_boost == 1.0
    ):
        if type(format_) is Positions:
            return POSITIONS
        if type(format_) is Frequency:
            return FREQUENCY
    return GENERIC


class Postings:
    """The postings of the documents added so far, by field and term, with each document's
    length byte per scorable field (the field lengths whoosh's blocks record)."""

    def __init__(self, schema: Any) -> None:
        self.tables: dict[str, dict[Any, list[Any]]] = {}
        self.kinds = {name: kind(schema[name]) for name in schema.names()}
        self.lengths: dict[str, bytearray] = {}
        """Each document's length byte, by scorable field."""
        self.size = 0
        """Bytes the postings take, estimated."""
        self._single: dict[int, bytes] = {}

    def analyze(self, name: str, field: Any, value: Any, boost: float) -> tuple[Any, int]:
        """The postings of one field of one document, and the field's length (the token
        count whoosh records): checked before any of the document is added."""
        kind_ = self.kinds.get(name, GENERIC)
        if kind_ != GENERIC and boost == 1.0 and isinstance(value, str):
            found = field.analyzer.positions(value)
            return found, sum(map(len, found.values())) if field.scorable else 0
        items = []
        length = 0
        text = kind_ != GENERIC  # the field's table is keyed by text, not bytes
        for tbytes, freq, weight, vbytes in field.index(value):
            if kind_ == POSITIONS:  # the field's values are packed
                vbytes = from_whoosh(vbytes)
            items.append((tbytes.decode("utf-8") if text else tbytes, weight * boost, vbytes))
            length += freq
        return items, length if field.scorable else 0

    def add(self, name: str, docnum: int, analyzed: Any) -> None:
        """Add one field's postings of document `docnum` (from `analyze`), which follows
        every document added before."""
        table = self.tables.get(name)
        if table is None:
            table = self.tables[name] = {}
        before = len(table)
        get = table.get
        if isinstance(analyzed, dict):
            if self.kinds[name] == POSITIONS:
                added = self._add_positions(table, docnum, analyzed)
            else:
                added = 0
                for term, poses in analyzed.items():
                    count = len(poses)
                    held = get(term)
                    if count < 1024:
                        weight, value = _WEIGHTS[count], _COUNTS[count]
                    else:
                        weight, value = float(count), pack_uint(count)
                    if held is None:
                        table[term] = [docnum, weight, value]
                    else:
                        held += (docnum, weight, value)
            postings = len(analyzed)
        else:
            added = 0
            for term, weight, value in analyzed:
                held = get(term)
                if held is None:
                    table[term] = [docnum, weight, value]
                else:
                    held += (docnum, weight, value)
                added += len(value) + VALUE_BYTES
            postings = len(analyzed)
        self.size += (len(table) - before) * TERM_BYTES + postings * POSTING_BYTES + added

    def _add_positions(self, table: dict[Any, list[Any]], docnum: int, found: dict[str, list[int]]) -> int:
        """Returns the bytes of the values made for these postings alone."""
        get = table.get
        single = self._single
        weights = _WEIGHTS
        added = 0
        for term, poses in found.items():
            count = len(poses)
            if count == 1:
                first = poses[0]
                value = single.get(first)
                if value is None:
                    value = pack(1, poses)
                    if first < SHARED_POSITIONS:
                        single[first] = value
                    else:
                        added += len(value) + VALUE_BYTES
                weight = 1.0
            else:
                value = pack(count, list(map(sub, poses, [0, *poses])))
                added += len(value) + VALUE_BYTES
                weight = weights[count] if count < 1024 else float(count)
            held = get(term)
            if held is None:
                table[term] = [docnum, weight, value]
            else:
                held += (docnum, weight, value)
        return added

    def add_length(self, name: str, docnum: int, length: int) -> None:
        """Record the field's length for document `docnum` (as whoosh's length column has it)."""
        held = self.lengths.get(name)
        if held is None:
            held = self.lengths[name] = bytearray()
        if len(held) < docnum:
            held.extend(bytes(docnum - len(held)))
        held.append(length_to_byte(length))

    def write(self, fieldwriter: Any, schema: Any, doccount: int, level: int) -> None:
        """Write every field's terms in order through `fieldwriter` (`blocks.FieldWriter`)
        and let go of them."""
        tables = self.tables
        for name in sorted(tables):
            table = tables.pop(name)
            if not table:
                continue
            lengths = self.lengths.pop(name, None)
            if lengths is not None and len(lengths) < doccount:
                lengths.extend(bytes(doccount - len(lengths)))
            if self.kinds.get(name, GENERIC) == GENERIC:
                terms: Any = ((text, table[text]) for text in sorted(table))
            else:
                terms = ((text.encode("utf-8"), table[text]) for text in sorted(table))
            packed = self.kinds.get(name, GENERIC) == POSITIONS
            fieldwriter.add_terms(name, schema[name], terms, lengths, level, packed)
            del table
        self.size = 0
