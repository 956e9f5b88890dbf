"""A term's postings in compact blocks, and the matcher that reads them.

whoosh 3's block is a 4-byte length, a pickled header tuple (count, last id, largest
weight, compression, length bytes: ~25 bytes) and a pickle of the id gaps, the weights
(a float each where they differ: 9 bytes) and the values (a position list is a 4-byte
count and pickle opcodes, two bytes a position).  Here a block is

    head byte (compressed, how weights are kept, whole max weight) | count |
    last id - the previous block's last id | max weight | min, max length bytes |
    data length | data

with varints, and its data (zlib-compressed when that makes it smaller) the id gaps from
the previous block's last id, then the weights, then the values: a positions field's
heads (count and gap width), then their gaps (`positions.py`), a count as itself, any
other value its length and bytes.  The
weights of a positions or counts field are the counts (a term's occurrences in the page):
they are not kept again.  A term's last block is the one that ends where its postings end
(the term info records their length).

`CompactMatcher` is whoosh's `W3LeafMatcher` reading these blocks; its values are the bytes
whoosh's formats decode (positions as `positions.compact_positions` makes them), and it
gives a positions field's positions and counts straight from the block (`value_as`):
scoring, phrase queries and block skipping are whoosh's own.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from itertools import accumulate
from typing import Any

from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.formats import Frequency, Positions
from whoosh.system import pack_uint, unpack_uint
from whoosh.util.numeric import byte_to_length

from .positions import compact_positions, from_whoosh, gaps, split
from .positions import size as gap_bytes
from .varint import get as get_varint
from .varint import get_many as get_varints
from .varint import put as put_varint
from .varint import put_many as put_varints

COMPRESSED = 1
WEIGHTS_ONE, WEIGHTS_COUNTS, WEIGHTS_WHOLE, WEIGHTS_FLOAT = 0, 2, 4, 6
WEIGHTS_MASK = 6
WHOLE_MAX = 8
SMALLEST_COMPRESSED = 24
"""Data shorter than this is kept as it is: zlib's header and checksum take 6 bytes."""
RAW, POSITIONS, COUNTS = 0, 1, 2
"""How a field's values are kept, by its format."""
_DOUBLE = struct.Struct("<d")
_WHOLE_LIMIT = 1 << 52


def value_kind(format_: Any) -> int:
    kind = type(format_)
    if kind is Positions:
        return POSITIONS
    if kind is Frequency:
        return COUNTS
    return RAW


class Encoder:
    """Encodes the blocks of one field's terms (values decoded once per distinct value)."""

    def __init__(self, format_: Any, level: int, packed: bool = False) -> None:
        """`packed`: the values of a positions field come packed (`positions.py`), not as
        whoosh's `Positions` values."""
        self.kind = value_kind(format_)
        self.packed = packed and self.kind == POSITIONS
        self.fixed = format_.fixed_value_size() if format_ is not None else None
        self.level = level
        self._memo: dict[bytes, tuple[int, bytes]] = {}

    def _value(self, value: Any) -> tuple[int, bytes]:
        """(the value's head, its gaps' bytes) for positions fields, (its count, b"") for
        counts fields."""
        if self.packed:  # bytes from the analyzer, (head, gaps' bytes) from a merge
            return value if type(value) is tuple else split(value)
        found = self._memo.get(value)
        if found is not None:
            return found
        found = split(from_whoosh(value)) if self.kind == POSITIONS else (unpack_uint(value[:4])[0], b"")
        if len(self._memo) < 1 << 16:
            self._memo[value] = found
        return found

    def block(
        self,
        ids: list[int],
        weights: list[float],
        values: list[Any],
        previous: int,
        small: int,
        big: int,
    ) -> bytes:
        """One block: `ids` ascending after `previous` (the last id of the block before, 0
        for the first), `small` and `big` the least and greatest length bytes."""
        data = bytearray()
        put = put_varint
        put_varints(data, [docnum - last for docnum, last in zip(ids, [previous, *ids], strict=False)])
        kind = self.kind
        if kind == RAW:
            encoded = b""
            counts: list[int] = []
        else:
            pairs = list(map(self._value, values))
            heads = [first for first, _ in pairs]
            counts = [first >> 2 for first in heads] if kind == POSITIONS else heads
            encoded = b"".join([part for _, part in pairs])
        head = 0
        if all(weight == 1.0 for weight in weights):
            head |= WEIGHTS_ONE
        elif counts and all(weight == count for weight, count in zip(weights, counts, strict=True)):
            head |= WEIGHTS_COUNTS
        elif all(weight.is_integer() and 0 <= weight < _WHOLE_LIMIT for weight in weights):
            head |= WEIGHTS_WHOLE
            put_varints(data, [int(weight) for weight in weights])
        else:
            head |= WEIGHTS_FLOAT
            data += struct.pack(f"<{len(weights)}d", *weights)
        if kind == RAW:
            fixed = self.fixed
            if fixed is None or fixed < 0:
                for value in values:
                    if value is None:
                        data.append(0)
                    else:
                        put(data, len(value) + 1)
                        data += value
            elif fixed > 0:
                data += b"".join(values)
        else:
            put_varints(data, heads)
            data += encoded
        if self.level and len(data) >= SMALLEST_COMPRESSED:
            packed = zlib.compress(data, self.level)
            if len(packed) < len(data):
                data = bytearray(packed)
                head |= COMPRESSED
        biggest = max(weights)
        if not biggest > 0:
            biggest = 0.0
        out = bytearray((0,))
        put(out, len(ids))
        put(out, ids[-1] - previous)
        if float(biggest).is_integer() and biggest < _WHOLE_LIMIT:
            head |= WHOLE_MAX
            put(out, int(biggest))
        else:
            out += _DOUBLE.pack(biggest)
        out.append(small)
        out.append(big)
        put(out, len(data))
        out[0] = head
        return bytes(out + data)


HEAD_BYTES = 48
"""A block's head is at most this long (the data length follows the largest fields)."""


def decode_head(raw: bytes, at: int, previous: int) -> tuple[dict[str, Any], int, int]:
    """The head of the block at `at` (its ids after `previous`): (the head's fields, where
    its data starts, the data's length)."""
    head = raw[at]
    count, at = get_varint(raw, at + 1)
    gap, at = get_varint(raw, at)
    if head & WHOLE_MAX:
        number, at = get_varint(raw, at)
        biggest = float(number)
    else:
        (biggest,) = _DOUBLE.unpack_from(raw, at)
        at += 8
    small, big = raw[at], raw[at + 1]
    size, at = get_varint(raw, at + 2)
    return (
        {
            "head": head,
            "count": count,
            "previous": previous,
            "maxid": previous + gap,
            "maxweight": biggest,
            "small": small,
            "big": big,
        },
        at,
        size,
    )


class Data:
    """A block's data: ids and weights decoded at once, values when asked for."""

    def __init__(self, block: dict[str, Any], data: bytes, format_: Any) -> None:
        head = block["head"]
        if head & COMPRESSED:
            data = zlib.decompress(data)
        count: int = block["count"]
        self.count = count
        id_gaps, at = get_varints(data, 0, count)
        id_gaps[0] += block["previous"]
        self.ids = tuple(accumulate(id_gaps))
        mode = head & WEIGHTS_MASK
        weights: Any = None
        if mode == WEIGHTS_WHOLE:
            numbers, at = get_varints(data, at, count)
            weights = array("f", numbers)
        elif mode == WEIGHTS_FLOAT:
            weights = array("f", struct.unpack_from(f"<{count}d", data, at))
            at += 8 * count
        self.kind = kind = value_kind(format_)
        self.format = format_
        self.counts: list[int] = []
        self.heads: list[int] = []
        """A positions field's value heads (`positions.py`)."""
        self.values_at = at
        """Where the values (their counts or heads first) start in the decompressed data."""
        self.size = len(data)
        if kind == POSITIONS:
            self.heads, at = get_varints(data, at, count)
            self.counts = [head >> 2 for head in self.heads]
        elif kind == COUNTS:
            self.counts, at = get_varints(data, at, count)
        if mode == WEIGHTS_ONE:
            weights = array("f", (1.0,)) * count
        elif mode == WEIGHTS_COUNTS:
            weights = array("f", self.counts)
        self.weights = weights
        self._data = data
        self._at = at
        self._positions: list[list[int]] | None = None

    def _bodies(self) -> list[bytes]:
        """Each posting's position gaps' bytes (a positions field's)."""
        data, at = self._data, self._at
        found = []
        for head in self.heads:
            end = at + gap_bytes(head)
            found.append(data[at:end])
            at = end
        return found

    def packed_values(self) -> tuple[Any, ...]:
        """The values as packed positions, each as its (head, gaps' bytes): a merge copies
        them without decoding them; for other formats, as `values` gives them."""
        if self.kind != POSITIONS:
            return self.values()
        return tuple(zip(self.heads, self._bodies(), strict=True))

    def positions(self) -> list[list[int]]:
        """Each posting's positions (a positions field's), decoded straight from the block."""
        found = self._positions
        if found is None:
            found = self._positions = [
                list(accumulate(gaps(body, head)))
                for head, body in zip(self.heads, self._bodies(), strict=True)
            ]
        return found

    def values(self) -> tuple[Any, ...]:
        """The values as whoosh's format decodes them."""
        data, at, count = self._data, self._at, self.count
        found: list[Any]
        kind = self.kind
        if kind == POSITIONS:
            return tuple(
                compact_positions(head >> 2, gaps(body, head))
                for head, body in zip(self.heads, self._bodies(), strict=True)
            )
        if kind == COUNTS:
            return tuple(map(pack_uint, self.counts))
        fixed = self.format.fixed_value_size()
        if fixed is None or fixed < 0:
            found = []
            for _ in range(count):
                size, at = get_varint(data, at)
                if size:
                    found.append(data[at : at + size - 1])
                    at += size - 1
                else:
                    found.append(None)
            return tuple(found)
        if fixed == 0:
            return (None,) * count
        return tuple(data[at + i * fixed : at + (i + 1) * fixed] for i in range(count))


class CompactMatcher(W3LeafMatcher):  # type: ignore[misc]
    """whoosh's leaf matcher over `postblocks` blocks (`_goto` and `_read_*` replaced)."""

    _block: dict[str, Any] | None = None
    _data: Any

    def _read_header(self) -> None:
        self._baseoffset = self._startoffset
        self._end = self._startoffset + self._length

    def _goto(self, position: int) -> None:
        previous = 0 if position == self._baseoffset or self._block is None else self._block["maxid"]
        raw = self._postfile.get(position, min(HEAD_BYTES, self._end - position))
        block, start, size = decode_head(raw, 0, previous)
        self._block = block
        self._data = self._ids = self._weights = self._values = None
        self._i = 0
        self._dataoffset = position + start
        self._nextoffset = position + start + size
        self._lastblock = self._nextoffset >= self._end
        self._blocklength = block["count"]
        self._maxid = block["maxid"]
        self._maxweight = block["maxweight"]
        self._compression = block["head"] & COMPRESSED
        self._minlength = byte_to_length(block["small"])
        self._maxlength = byte_to_length(block["big"])

    def _read_data(self) -> None:
        assert self._block is not None
        data = self._postfile.get(self._dataoffset, self._nextoffset - self._dataoffset)
        self._data = Data(self._block, data, self.format)

    def _read_ids(self) -> None:
        if self._data is None:
            self._read_data()
        self._ids = self._data.ids

    def _read_weights(self) -> None:
        if self._data is None:
            self._read_data()
        self._weights = self._data.weights

    def value_as(self, astype: str) -> Any:
        """whoosh's `value_as`; a positions field's positions and counts read from the block
        without making the bytes whoosh's format would decode them from."""
        if astype == "positions" or astype == "frequency":
            if self._data is None:
                self._read_data()
            data = self._data
            if data.kind == POSITIONS:
                if astype == "frequency":
                    return data.counts[self._i]
                return data.positions()[self._i]
        return super().value_as(astype)

    def _read_values(self) -> None:
        if self._data is None:
            self._read_data()
        self._values = self._data.values()


class Spliced:
    """A term's postings gathered by a merge without a value or a weight of its own each:
    the documents, the value heads (a positions field's: count * 4 + width code; a counts
    field's: the count; none for a field without values) and the positions' bytes one after
    the other.  The weights are the counts (1 without values): a block whose weights are
    anything else is not gathered this way (`block_sections`).  `total` is the term's
    weight, summed from the merged segments' term infos.

    The numbers are lists, faster to extend and slice, until a term's postings pass
    `tiers.LISTED_POSTINGS`; then arrays of 4-byte ints (`to_arrays`): a list takes ~36
    bytes an id, ~20 MB for a term in every page of a merge of ~270,000 pages."""

    __slots__ = ("bodies", "heads", "ids", "total")

    def __init__(self) -> None:
        self.ids: list[int] | array[int] = []
        self.heads: list[int] | array[int] = []
        self.bodies = bytearray()
        self.total = 0.0

    def to_arrays(self) -> None:
        """The numbers kept as arrays from now on."""
        self.ids = array("I", self.ids)
        self.heads = array("I", self.heads)


def block_sections(
    raw: bytes, at: int, previous: int, kind: int, shift: int
) -> tuple[list[int], list[int], bytes, int] | None:
    """(the ids plus `shift`, the value heads and the positions' bytes of the block at `at`
    of `raw` (its ids after `previous`), where the next block starts), read from the
    block's data without splitting it posting by posting; None when its weights are not
    its counts (then it is decoded as `Data`)."""
    head = raw[at]
    count, at = get_varint(raw, at + 1)
    _, at = get_varint(raw, at)
    if head & WHOLE_MAX:
        _, at = get_varint(raw, at)
    else:
        at += 8
    size, at = get_varint(raw, at + 2)
    data = raw[at : at + size]
    if head & COMPRESSED:
        data = zlib.decompress(data)
    mode = head & WEIGHTS_MASK
    id_gaps, start = get_varints(data, 0, count)
    id_gaps[0] += previous + shift
    ids = list(accumulate(id_gaps))
    if kind == RAW:
        return (ids, [], b"", at + size) if mode == WEIGHTS_ONE else None
    if mode != WEIGHTS_ONE and mode != WEIGHTS_COUNTS:
        return None
    heads, start = get_varints(data, start, count)
    if mode == WEIGHTS_ONE and max(heads) >= (8 if kind == POSITIONS else 2):
        return None  # weights of 1 that are not the counts
    return ids, heads, data[start:] if kind == POSITIONS else b"", at + size


def spliced_block(
    spliced: Spliced,
    first: int,
    last: int,
    bodies: bytes | bytearray,
    kind: int,
    level: int,
    previous: int,
    small: int,
    big: int,
) -> bytes:
    """`Encoder.block` of the postings `first` to `last` of `spliced` (`bodies` their
    positions' bytes), byte for byte: the same block from sections copied whole."""
    ids = list(spliced.ids[first:last])
    data = bytearray()
    put_varints(data, [ids[0] - previous, *map(int.__sub__, ids[1:], ids[:-1])])
    head = 0
    if kind == RAW:
        biggest = 1
    else:
        heads = list(spliced.heads[first:last])  # bytes(an array) would be its buffer
        top = max(heads)
        biggest = top >> 2 if kind == POSITIONS else top
        head |= WEIGHTS_ONE if biggest == 1 else WEIGHTS_COUNTS
        put_varints(data, heads)
        data += bodies
    if level and len(data) >= SMALLEST_COMPRESSED:
        packed = zlib.compress(data, level)
        if len(packed) < len(data):
            data = bytearray(packed)
            head |= COMPRESSED
    out = bytearray((head | WHOLE_MAX,))
    put_varint(out, len(ids))
    put_varint(out, ids[-1] - previous)
    put_varint(out, biggest)
    out.append(small)
    out.append(big)
    put_varint(out, len(data))
    return bytes(out + data)
