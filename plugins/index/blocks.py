"""The compact codec: a segment's terms and postings written a term at a time, and read.

whoosh's `W3PostingsWriter` takes a posting per call and its term index a term per call.
With a term's postings already in hand (`postings.py`), `FieldWriter.add_terms` cuts them
into blocks of `blocklimit`, encodes each block (`postblocks.py`: varints, zlib where that
makes it smaller, weights not kept twice), builds the term's info (`terminfo.py`) and adds
it to the term file (`termfile.py`: sorted, front-coded, compressed blocks of terms), in
large writes.  A term of one posting (most terms of a segment: rare words, names, numbers)
keeps it in its term info instead of a block of its own.

`Codec` is whoosh 3's codec with these files: the segments it writes name it, and whoosh
opens them through `Codec.terms_reader` (`CompactTermsReader`, `CompactMatcher`); a segment
written before names whoosh's `W3Codec` and is read by whoosh's own reader.  Searching,
scoring, phrase queries and merging are whoosh's (and `tiers.py`'s) on either:
`tests/test_index_builder.py` compares every posting, block and search with what whoosh's
own writer makes.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.codec.whoosh3 import W3Codec, W3FieldWriter, W3Segment, W3TermsReader
from whoosh.matching import ListMatcher
from whoosh.reading import TermNotFound
from whoosh.system import pack_uint, pack_ushort
from whoosh.util.numeric import length_to_byte

from .positions import size as body_bytes
from .positions import to_whoosh
from .postblocks import POSITIONS, RAW, CompactMatcher, Encoder, Spliced, spliced_block
from .termfile import TermFileReader, TermFileWriter
from .terminfo import decode as decode_info
from .terminfo import doc_frequency as info_doc_frequency
from .terminfo import encode as encode_info

LEVEL = 1
"""zlib's level for posting blocks: the blocks' pickles of small numbers lose about 40% at
any level, level 1 costs the least CPU."""
SMALLEST_COMPRESSED = 48
"""Blocks whose data is shorter are written as they are: zlib's header and checksum take 6
of the few bytes it could save."""
DATA_PROTOCOL = 3
"""Pickle protocol of a block's data.  whoosh pickles with protocol 2, which has no bytes
type: each value (a posting's positions) is pickled as a call of `_codecs.encode` on a
latin-1 string, ~20 bytes more than protocol 3's bytes; whoosh unpickles either (pickle
reads its protocol from the data)."""
FLUSH_BYTES = 1 << 20
"""Bytes of postings and term index gathered before they are written."""

TERMS_EXT = ".ctd"
"""The compact term dictionary's file (whoosh's is `.trm`)."""
POSTS_EXT = ".cpb"
"""The compact posting blocks' file (whoosh's is `.pst`)."""
_FLOAT = struct.Struct("f").pack
_ROUND = struct.Struct("f").unpack


class FieldWriter(W3FieldWriter):  # type: ignore[misc]
    """The compact codec's field writer: `add_terms` writes a field's terms from whole
    posting lists; whoosh's `start_term`/`add`/`finish_term` also work (a term's postings
    gathered, then written the same way)."""

    def __init__(self, codec: Any, storage: Any, segment: Any) -> None:
        self._codec = codec
        self._storage = storage
        self._segment = segment
        self._fieldname: str | None = None
        self._fieldid: int | None = None
        self._btext: bytes | None = None
        self._fieldobj: Any = None
        self._format: Any = None
        self._tindex = TermFileWriter(self._create_file(TERMS_EXT))
        self._fieldmap: dict[str, int] = {}
        self._tindex.extras["fieldmap"] = self._fieldmap
        self._postfile = self._create_file(POSTS_EXT)
        self._postwriter = None
        self._infield = False
        self.is_closed = False
        self._encoder: Encoder | None = None
        self._flat: list[Any] = []
        self._lengths: dict[int, int] = {}

    def start_field(self, fieldname: str, fieldobj: Any) -> None:
        super().start_field(fieldname, fieldobj)
        self._postwriter = None
        self._encoder = Encoder(fieldobj.format, LEVEL)

    def start_term(self, btext: bytes) -> None:
        if self._encoder is None:
            raise ValueError("start_term before start_field")
        self._btext = btext
        self._flat = []
        self._lengths = {}

    def add(self, docnum: int, weight: float, vbytes: bytes, length: int | None) -> None:
        self._flat += (docnum, weight, vbytes)
        self._lengths[docnum] = length_to_byte(length) if length else 0

    def finish_term(self) -> None:
        assert self._btext is not None and self._encoder is not None
        lengths = self._lengths if self._fieldobj.scorable else None
        info, parts = self._term(self._flat, self._encoder, self._postfile.tell(), lengths)
        self._postfile.write(b"".join(parts))
        self._tindex.add(pack_ushort(self._fieldid) + self._btext, info)

    def add_terms(
        self,
        fieldname: str,
        fieldobj: Any,
        terms: Iterable[tuple[bytes, list[Any] | Spliced]],
        lengths: bytes | bytearray | None,
        level: int,
        packed: bool = False,
    ) -> None:
        """Write the field's `terms` in ascending order: (term bytes, [document, weight,
        value, ...] in document order, or a merge's `Spliced` postings: the same blocks,
        made from their sections).  `lengths` holds each document's length byte
        (None: a field without lengths); blocks are compressed at `level` (0: none) where
        that makes them smaller; `packed`: a positions field's values are packed
        (`positions.py`), not whoosh's."""
        self.start_field(fieldname, fieldobj)
        encoder = Encoder(fieldobj.format, level, packed)
        postfile = self._postfile
        offset = postfile.tell()
        prefix = pack_ushort(self._fieldid)
        keys: list[bytes] = []
        infos: list[bytes] = []
        parts: list[bytes] = []
        held = 0
        for btext, flat in terms:
            info, written = self._term(flat, encoder, offset, lengths)
            for part in written:
                offset += len(part)
                held += len(part)
            parts += written
            keys.append(prefix + btext)
            infos.append(info)
            if held >= FLUSH_BYTES:
                postfile.write(b"".join(parts))
                self._tindex.add_many(keys, infos)
                parts, keys, infos, held = [], [], [], 0
        postfile.write(b"".join(parts))
        self._tindex.add_many(keys, infos)
        self.finish_field()

    def _term(
        self, postings: list[Any] | Spliced, encoder: Encoder, offset: int, lengths: Any
    ) -> tuple[bytes, list[bytes]]:
        """(the term info, the blocks to write at `offset`) of one term's postings."""
        if isinstance(postings, Spliced):
            if len(postings.ids) > 1:
                return self._spliced_term(postings, encoder, offset, lengths)
            flat = self._spliced_single(postings, encoder)
        else:
            flat = postings
        if len(flat) == 3:  # one posting, inlined in the term info: most terms of a segment
            docnum, weight, value = flat
            rounded = weight if weight == 1.0 else _ROUND(_FLOAT(weight))[0]
            biggest = rounded if rounded > 0 else 0
            small = lengths[docnum] if lengths is not None else 0
            weights = None if rounded == 1.0 else (rounded,)  # None: whoosh reads 1.0
            if encoder.packed:  # the analyzer's or a merge's positions, packed
                value = to_whoosh(value)
            inlined = ((docnum,), weights, (value or None,))
            info = encode_info(rounded, 1, small, small, biggest, docnum, docnum, None, inlined)
            return info, []
        parts: list[bytes] = []
        length, stats = self._blocks(flat, parts, self._codec._blocklimit, encoder, lengths)
        total, count, low, high, top, first, last = stats
        info = encode_info(total, count, low, high, top, first, last, (offset, length), None)
        return info, parts

    @staticmethod
    def _spliced_single(spliced: Spliced, encoder: Encoder) -> list[Any]:
        """The one posting of `spliced` as a flat posting list (kept in the term info)."""
        kind = encoder.kind
        if kind == RAW:
            return [spliced.ids[0], 1.0, None]
        head = spliced.heads[0]
        if kind == POSITIONS:
            return [spliced.ids[0], float(head >> 2), (head, bytes(spliced.bodies))]
        return [spliced.ids[0], float(head), pack_uint(head)]

    def _spliced_term(
        self, spliced: Spliced, encoder: Encoder, offset: int, lengths: Any
    ) -> tuple[bytes, list[bytes]]:
        """`_term` of postings a merge gathered as `Spliced`: the same blocks, their
        sections copied."""
        ids = spliced.ids
        heads = spliced.heads
        bodies = spliced.bodies
        kind = encoder.kind
        count = len(ids)
        limit = self._codec._blocklimit
        parts: list[bytes] = []
        top = low = high = written = previous = at = 0
        for first in range(0, count, limit):
            last = min(first + limit, count)
            block_bodies: bytes | bytearray
            if kind != POSITIONS:
                block_bodies = b""
            elif last == count:
                block_bodies = bodies[at:]
            else:
                end = at + sum(map(body_bytes, heads[first:last]))
                block_bodies = bodies[at:end]
                at = end
            if lengths is None:
                small = big = 0
            else:
                found = bytes(map(lengths.__getitem__, ids[first:last]))
                big = max(found)
                small = min(found) if 0 not in found else min(found.replace(b"\0", b""), default=0)
            data = spliced_block(
                spliced, first, last, block_bodies, kind, encoder.level, previous, small, big
            )
            parts.append(data)
            written += len(data)
            previous = ids[last - 1]
            if small and (not low or small < low):
                low = small
            if big > high:
                high = big
        if kind == RAW:
            top = 1
        else:
            top = max(heads)
            if kind == POSITIONS:
                top >>= 2
        info = encode_info(spliced.total, count, low, high, top, ids[0], ids[-1], (offset, written), None)
        return info, parts

    @staticmethod
    def _blocks(
        flat: list[Any],
        parts: list[bytes],
        limit: int,
        encoder: Encoder,
        lengths: Any,
    ) -> tuple[int, tuple[Any, ...]]:
        """A term's blocks appended to `parts`: (their bytes, the term's statistics)."""
        ids = flat[0::3]
        weights = flat[1::3]
        values = flat[2::3]
        count = len(ids)
        total = 0.0
        top: float = 0
        low = high = 0
        written = 0
        previous = 0
        for first in range(0, count, limit):
            last = min(first + limit, count)
            block_ids = ids[first:last]
            block = array("f", weights[first:last])
            biggest = max(block)
            if not biggest > 0:
                biggest = 0
            if lengths is None:
                small = big = 0
            else:
                found = bytes(map(lengths.__getitem__, block_ids))
                big = max(found)
                small = min(found) if 0 not in found else min(found.replace(b"\0", b""), default=0)
            data = encoder.block(block_ids, block.tolist(), values[first:last], previous, small, big)
            parts.append(data)
            written += len(data)
            previous = block_ids[-1]
            total += sum(block)
            if biggest > top:
                top = biggest
            if small and (not low or small < low):
                low = small
            if big > high:
                high = big
        return written, (total, count, low, high, top, ids[0], ids[-1])


class Codec(W3Codec):  # type: ignore[misc]
    """whoosh 3's codec with the compact term dictionary (`termfile.py`, `terminfo.py`) and
    posting blocks (`postblocks.py`) in files of their own names: a segment naming this
    codec is read by `CompactTermsReader`; one naming whoosh's `W3Codec` (written before)
    by whoosh's reader."""

    TERMS_EXT = TERMS_EXT
    POSTS_EXT = POSTS_EXT

    def field_writer(self, storage: Any, segment: Any) -> Any:
        return FieldWriter(self, storage, segment)

    def terms_reader(self, storage: Any, segment: Any) -> Any:
        name = segment.make_filename(TERMS_EXT)
        length = storage.file_length(name)
        tfile = storage.open_file(name)
        try:
            postfile = segment.open_file(storage, POSTS_EXT)
        except BaseException:
            tfile.close()
            raise
        return CompactTermsReader(self, tfile, length, postfile)

    def new_segment(self, storage: Any, indexname: str) -> Any:
        return W3Segment(Codec(), indexname)


class CompactTermsReader(W3TermsReader):  # type: ignore[misc]
    """whoosh's `W3TermsReader` over a compact term file."""

    def __init__(self, codec: Any, dbfile: Any, length: int, postfile: Any) -> None:
        self._codec = codec
        self._dbfile = dbfile
        self._tindex = TermFileReader(dbfile, length)
        self._fieldmap = self._tindex.extras["fieldmap"]
        self._postfile = postfile
        self._fieldunmap: list[str | None] = [None] * len(self._fieldmap)
        for fieldname, number in self._fieldmap.items():
            self._fieldunmap[number] = fieldname

    def _value(self, fieldname: str, tbytes: bytes) -> bytes:
        value = self._tindex.get(self._keycoder(fieldname, tbytes))
        if value is None:
            raise TermNotFound(f"No term {fieldname}:{tbytes!r}")
        return value

    def cursor(self, fieldname: str, fieldobj: Any) -> Any:
        return CompactCursor(self, fieldname, fieldobj)

    def terms(self) -> Iterator[tuple[str, bytes]]:
        decoder = self._keydecoder
        return (decoder(key) for key, _ in self._tindex.items())

    def terms_from(self, fieldname: str, prefix: bytes) -> Iterator[tuple[str, bytes]]:
        decoder = self._keydecoder
        return (decoder(key) for key, _ in self._tindex.items_from(self._keycoder(fieldname, prefix)))

    def items(self) -> Iterator[tuple[tuple[str, bytes], Any]]:
        decoder = self._keydecoder
        decode = decode_info
        return ((decoder(key), decode(value)) for key, value in self._tindex.items())

    def items_from(self, fieldname: str, prefix: bytes) -> Iterator[tuple[tuple[str, bytes], Any]]:
        decoder = self._keydecoder
        decode = decode_info
        start = self._keycoder(fieldname, prefix)
        return ((decoder(key), decode(value)) for key, value in self._tindex.items_from(start))

    def term_info(self, fieldname: str, tbytes: bytes) -> Any:
        return decode_info(self._value(fieldname, tbytes))

    def frequency(self, fieldname: str, tbytes: bytes) -> float:
        """Raises KeyError for an absent term, as whoosh's reader expects."""
        value = self._tindex.get(self._keycoder(fieldname, tbytes))
        if value is None:
            raise KeyError(tbytes)
        return float(decode_info(value).weight())

    def doc_frequency(self, fieldname: str, tbytes: bytes) -> int:
        """Raises KeyError for an absent term, as whoosh's reader expects."""
        value = self._tindex.get(self._keycoder(fieldname, tbytes))
        if value is None:
            raise KeyError(tbytes)
        return info_doc_frequency(value)

    def matcher(self, fieldname: str, tbytes: bytes, format_: Any, scorer: Any = None) -> Any:
        info = self.term_info(fieldname, tbytes)
        term = (fieldname, tbytes)
        if info.is_inlined():
            ids, weights, values = info.inlined_postings()
            return ListMatcher(ids, weights, values, format_, scorer=scorer, term=term, terminfo=info)
        offset, length = info.extent()
        return CompactMatcher(self._postfile, offset, length, format_, term=term, scorer=scorer)


class CompactCursor:
    """whoosh's field cursor (`W3FieldCursor`'s methods) over a compact term file."""

    def __init__(self, reader: CompactTermsReader, fieldname: str, fieldobj: Any) -> None:
        self._reader = reader
        self._fieldname = fieldname
        self._fieldobj = fieldobj
        self._items: Iterator[tuple[bytes, bytes]] = iter(())
        self._text: Any = None
        self._value: bytes | None = None
        self.find(b"")

    def first(self) -> Any:
        return self.find(b"")

    def find(self, term: Any) -> Any:
        if not isinstance(term, bytes):
            term = self._fieldobj.to_bytes(term)
        key = self._reader._keycoder(self._fieldname, term)
        self._items = self._reader._tindex.items_from(key)
        return self.next()

    def next(self) -> Any:
        for key, value in self._items:
            fieldname, text = self._reader._keydecoder(key)
            if fieldname == self._fieldname:
                self._text = self._fieldobj.from_bytes(text)
                self._value = value
                return self._text
            break
        self._items = iter(())
        self._text = self._value = None
        return None

    def text(self) -> Any:
        return self._text

    def term_info(self) -> Any:
        return None if self._value is None else decode_info(self._value)

    def is_valid(self) -> bool:
        return self._value is not None
