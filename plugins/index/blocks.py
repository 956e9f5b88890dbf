"""A segment's terms and posting blocks written a term at a time, in whoosh 3's format.

whoosh's `W3PostingsWriter` takes a posting per call (type checks, array appends, running
minima and maxima) and its term index a term per call (three writes, a `tell`).  With a
term's postings already in hand (`postings.py`), `FieldWriter.add_terms` cuts them into
blocks of `blocklimit` and encodes each block as `W3PostingsWriter._write_block` does (the
delta-encoded ids, the weights reduced to None, one number or a tuple, the values as the
format keeps them, the block's count, last id, largest weight, compression and length
bytes), builds the `W3TermInfo` bytes, and writes postings and term index in large
writes.  The files are whoosh's own: `tests/test_index_builder.py` reads every posting
back through stock whoosh and compares it with what whoosh's writer makes.

Two choices whoosh's reader allows and its writer does not make keep the postings small:
every block is zlib-compressed when that makes it smaller (each block says whether it is),
and a term of one posting (most terms of a segment: rare words, names, numbers) keeps it
inlined in its term info, pickled with protocol 3, instead of a block of its own in the
postings file with its own header and a pointer to it (whoosh reads inlined postings of
any term; its writer's `inlinelimit` test never passes).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterable
from hashlib import md5
from itertools import chain
from operator import sub
from pickle import dumps
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec, W3FieldWriter, W3TermInfo
from whoosh.filedb.filetables import OrderedHashWriter, _lengths, _pointer
from whoosh.system import pack_int, pack_ushort

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

_TERMINFO = struct.Struct(W3TermInfo._struct.format + "qi").pack
"""A term's `W3TermInfo` bytes: its statistics, then where its postings are (offset, length)."""
_INLINED = W3TermInfo._struct.pack
"""A term's `W3TermInfo` bytes before its inlined postings (their pickle follows)."""
_FLOAT = struct.Struct("f").pack
_ROUND = struct.Struct("f").unpack


def _term_hash(key: bytes) -> int:
    """whoosh's `md5_hash` (the low 32 bits of the digest), without the hex round trip."""
    return int.from_bytes(md5(key, usedforsecurity=False).digest()[12:], "big")


class TermIndex(OrderedHashWriter):  # type: ignore[misc]
    """whoosh's ordered hash file of terms, written with few calls: the same bytes."""

    lastkey: bytes

    def add_many(self, keys: list[bytes], values: list[bytes]) -> None:
        """Add (key, value) pairs, keys ascending and above any added before."""
        if not keys:
            return
        if keys[0] <= self.lastkey:
            raise ValueError(f"Keys must increase: {self.lastkey!r}..{keys[0]!r}")
        dbfile = self.dbfile
        pos = dbfile.tell()
        buckets = self.buckets
        positions: list[int] = []
        parts: list[bytes] = []
        pack = _lengths.pack
        for key, value in zip(keys, values, strict=True):
            positions.append(pos)
            head = pack(len(key), len(value))
            parts += (head, key, value)
            h = _term_hash(key)
            buckets[h & 255].append((h, pos))
            pos += len(head) + len(key) + len(value)
        dbfile.write(b"".join(parts))
        self.index.extend(positions)
        self.lastkey = keys[-1]

    def _write_hashes(self) -> None:
        """`HashWriter._write_hashes` with a write per table instead of per slot, and a
        table a quarter larger than its terms rather than twice (12 bytes a slot; whoosh's
        reader probes the slots after a term's until an empty one, and reads the size)."""
        dbfile = self.dbfile
        null = (0, 0)
        pack = _pointer.pack
        for entries in self.buckets:
            pos = dbfile.tell()
            numslots = len(entries) * 4 // 3 + 1 if entries else 0
            self.directory.append((pos, numslots))
            hashtable = [null] * numslots
            for hashval, position in entries:
                slot = (hashval >> 8) % numslots
                while hashtable[slot] != null:
                    slot = (slot + 1) % numslots
                hashtable[slot] = (hashval, position)
            dbfile.write(b"".join([pack(hashval, position) for hashval, position in hashtable]))


class FieldWriter(W3FieldWriter):  # type: ignore[misc]
    """whoosh 3's field writer; `add_terms` writes a field's terms from whole posting lists."""

    def __init__(self, codec: Any, storage: Any, segment: Any) -> None:
        super().__init__(codec, storage, segment)
        self._tindex.__class__ = TermIndex  # the same writer (its header is written) with `add_many`

    def add_terms(
        self,
        fieldname: str,
        fieldobj: Any,
        terms: Iterable[tuple[bytes, list[Any]]],
        lengths: bytes | bytearray | None,
        level: int,
    ) -> None:
        """Write the field's `terms` in ascending order: (term bytes, [document, weight,
        value, ...] in document order).  `lengths` holds each document's length byte
        (None: a field without lengths); blocks are compressed at `level` (0: none) where
        that makes them smaller."""
        self.start_field(fieldname, fieldobj)
        fixed = fieldobj.format.fixed_value_size()
        listed = fixed is None or fixed < 0  # values kept as a tuple, else joined (or None)
        limit = self._codec._blocklimit
        postfile = self._postfile
        offset = postfile.tell()
        prefix = pack_ushort(self._fieldid)
        keys: list[bytes] = []
        infos: list[bytes] = []
        parts: list[bytes] = []
        held = 0
        for btext, flat in terms:
            if len(flat) == 3:  # one posting, inlined in the term info: most terms of a segment
                docnum, weight, value = flat
                rounded = weight if weight == 1.0 else _ROUND(_FLOAT(weight))[0]
                biggest = weight if weight > 0 else 0
                small = lengths[docnum] if lengths is not None else 0
                weights = None if rounded == 1.0 else (rounded,)  # None: whoosh reads 1.0
                info = _INLINED(1, rounded, 1, small, small, biggest, docnum, docnum) + dumps(
                    ((docnum,), weights, (value or None,)), DATA_PROTOCOL
                )
                held += len(info)
            else:
                length, stats = self._blocks(flat, parts, limit, listed, fixed, lengths, level)
                info = _TERMINFO(0, *stats, offset, length)
                offset += length
                held += length
            keys.append(prefix + btext)
            infos.append(info)
            if held >= FLUSH_BYTES:
                postfile.write(b"".join(parts))
                self._tindex.add_many(keys, infos)
                parts, keys, infos, held = [], [], [], 0
        postfile.write(b"".join(parts))
        self._tindex.add_many(keys, infos)
        self.finish_field()

    @staticmethod
    def _blocks(
        flat: list[Any],
        parts: list[bytes],
        limit: int,
        listed: bool,
        fixed: int | None,
        lengths: bytes | bytearray | None,
        level: int,
    ) -> tuple[int, tuple[Any, ...]]:
        """A term's blocks appended to `parts`: (their bytes, the term's statistics)."""
        ids = flat[0::3]
        weights = flat[1::3]
        values = flat[2::3]
        count = len(ids)
        total = 0.0
        top: float = 0
        low = high = 0
        parts.append(WHOOSH3_HEADER_MAGIC)
        written = 4
        for first in range(0, count, limit):
            last = min(first + limit, count)
            size = last - first
            block_ids = ids[first:last]
            block = array("f", weights[first:last])
            weight = block[0]
            if block.count(weight) == size:
                weighed: Any = None if weight == 1.0 else weight
            else:
                weighed = tuple(block)
            deltas = tuple(map(sub, block_ids, chain((0,), block_ids)))
            if listed:
                kept: Any = tuple(filter(None, values[first:last]))
            else:
                kept = b"".join(values[first:last]) if fixed else None
            data = dumps((deltas, weighed, kept), DATA_PROTOCOL)
            compression = 0
            if level and len(data) >= SMALLEST_COMPRESSED:
                packed = zlib.compress(data, level)
                if len(packed) < len(data):
                    data, compression = packed, level
            biggest = max(weights[first:last])
            if not biggest > 0:
                biggest = 0
            if lengths is None:
                small = big = 0
            else:
                found = bytes(map(lengths.__getitem__, block_ids))
                big = max(found)
                small = min(found) if 0 not in found else min(found.replace(b"\0", b""), default=0)
            info = dumps((size, block_ids[-1], biggest, compression, small, big), 2)
            length = len(info) + len(data)
            parts += (pack_int(-length if last == count else length), info, data)
            written += 4 + length
            total += sum(block)
            if biggest > top:
                top = biggest
            if small and (not low or small < low):
                low = small
            if big > high:
                high = big
        return written, (total, count, low, high, top, ids[0], ids[-1])


class Codec(W3Codec):  # type: ignore[misc]
    """whoosh 3's codec whose field writer takes whole posting lists (`add_terms`)."""

    def field_writer(self, storage: Any, segment: Any) -> Any:
        return FieldWriter(self, storage, segment)
