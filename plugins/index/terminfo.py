"""A term's statistics and where its postings are, in a few bytes.

whoosh's `W3TermInfo` is a fixed 23-byte struct (flags, total weight and largest weight as
floats, document count, first and last document as 4-byte integers) and a 12-byte pointer
or a pickle of inlined postings.  Most terms occur in one or two pages with small counts:
here the integers are varints, the weights varints when whole, the last document a gap from
the first, and a single inlined posting is its value alone (its document is the first, its
weight the total):

    flags | doc count | weight | min, max length bytes | max weight | first id | last - first
      then: postings offset, length            (not inlined)
         or value length + 1 (0: None), value  (one inlined posting)
         or the pickle of the inlined postings (any other)

Decoded into whoosh's own `W3TermInfo`, which the rest of whoosh reads.
"""

from __future__ import annotations

import struct
from pickle import dumps, loads
from typing import Any

from whoosh.codec.whoosh3 import W3TermInfo
from whoosh.util.numeric import byte_to_length

from .varint import get as get_varint
from .varint import put as put_varint

INLINED = 1
SINGLE = 2
"""One inlined posting: its value alone is kept."""
WHOLE_WEIGHT = 4
WHOLE_MAX = 8
NO_IDS = 16
_FLOAT = struct.Struct("<f")
_ROUND = struct.Struct("f")
_NO_ID = 0xFFFFFFFF
_WHOLE_LIMIT = 1 << 24
"""Whole weights below this are kept as varints: a float32 holds them exactly."""


def _rounded(number: float) -> float:
    """`number` as whoosh's term info reads it back: a float32."""
    return float(_ROUND.unpack(_ROUND.pack(number))[0])


def encode(
    weight: float,
    df: int,
    minlength: int,
    maxlength: int,
    maxweight: float,
    minid: int | None,
    maxid: int | None,
    extent: tuple[int, int] | None,
    inlined: tuple[Any, Any, Any] | None,
) -> bytes:
    """A term info's bytes; `minlength`, `maxlength` as length bytes (whoosh's
    `length_to_byte`), `extent` the postings' (offset, length) unless `inlined`."""
    out = bytearray(1)
    flags = 0
    put_varint(out, df)
    weight = _rounded(weight)
    if weight.is_integer() and 0 <= weight < _WHOLE_LIMIT:
        flags |= WHOLE_WEIGHT
        put_varint(out, int(weight))
    else:
        out += _FLOAT.pack(weight)
    out.append(minlength)
    out.append(maxlength)
    maxweight = _rounded(maxweight)
    if maxweight.is_integer() and 0 <= maxweight < _WHOLE_LIMIT:
        flags |= WHOLE_MAX
        put_varint(out, int(maxweight))
    else:
        out += _FLOAT.pack(maxweight)
    if minid is None or maxid is None or minid == _NO_ID:
        flags |= NO_IDS
    else:
        put_varint(out, minid)
        put_varint(out, maxid - minid)
    if inlined is None:
        assert extent is not None
        put_varint(out, extent[0])
        put_varint(out, extent[1])
    else:
        flags |= INLINED
        ids, weights, values = inlined
        single = (
            minid is not None
            and len(ids) == 1
            and ids[0] == minid
            and len(values) == 1
            and (values[0] is None or isinstance(values[0], bytes))
            and _one_weight(weights, weight)
        )
        if single:
            flags |= SINGLE
            value = values[0]
            if value is None:
                out.append(0)
            else:
                put_varint(out, len(value) + 1)
                out += value
        else:
            out += dumps(inlined, 4)
    out[0] = flags
    return bytes(out)


def _one_weight(weights: Any, weight: float) -> bool:
    """Whether an inlined posting's `weights` are what `decode` makes of the total `weight`."""
    if weights is None:
        return weight == 1.0
    return weight != 1.0 and tuple(weights) == (weight,)


class CompactInfo(W3TermInfo):  # type: ignore[misc]
    """A `W3TermInfo` read from a compact term file: a merge knows its postings' blocks
    are the compact codec's (`tiers.py`)."""


def decode(data: bytes) -> Any:
    """The `CompactInfo` of `encode`'s bytes."""
    info = CompactInfo.__new__(CompactInfo)
    flags = data[0]
    # One-byte numbers (most) read inline: a merge decodes every term info of its segments.
    df = data[1]
    if df < 0x80:
        at = 2
    else:
        df, at = get_varint(data, 1)
    if flags & WHOLE_WEIGHT:
        number = data[at]
        if number < 0x80:
            at += 1
        else:
            number, at = get_varint(data, at)
        weight = float(number)
    else:
        (weight,) = _FLOAT.unpack_from(data, at)
        at += 4
    minlength, maxlength = data[at], data[at + 1]
    at += 2
    if flags & WHOLE_MAX:
        number = data[at]
        if number < 0x80:
            at += 1
        else:
            number, at = get_varint(data, at)
        maxweight = float(number)
    else:
        (maxweight,) = _FLOAT.unpack_from(data, at)
        at += 4
    minid: int | None = None
    maxid: int | None = None
    if not flags & NO_IDS:
        minid, at = get_varint(data, at)
        gap = data[at]
        if gap < 0x80:
            at += 1
        else:
            gap, at = get_varint(data, at)
        maxid = minid + gap
    info._weight = weight
    info._df = df
    info._minlength = byte_to_length(minlength)
    info._maxlength = byte_to_length(maxlength)
    info._maxweight = maxweight
    info._minid = minid
    info._maxid = maxid
    info._offset = info._length = info._inlined = None
    if not flags & INLINED:
        info._offset, at = get_varint(data, at)
        info._length, at = get_varint(data, at)
    elif flags & SINGLE:
        size, at = get_varint(data, at)
        value = data[at : at + size - 1] if size else None
        info._inlined = ((minid,), None if weight == 1.0 else (weight,), (value,))
    else:
        info._inlined = loads(data[at:])
    return info


def doc_frequency(data: bytes) -> int:
    """The term's document count, read alone (queries estimate their sizes with it)."""
    return get_varint(data, 1)[0]


def from_whoosh(info: Any) -> bytes:
    """`encode` of a `W3TermInfo` (whoosh's posting writer's)."""
    from whoosh.util.numeric import length_to_byte

    minlength = 0 if info._minlength is None else length_to_byte(info._minlength)
    return encode(
        info._weight,
        info._df,
        minlength,
        length_to_byte(info._maxlength),
        info._maxweight,
        info._minid,
        info._maxid,
        None if info.is_inlined() else info.extent(),
        info._inlined,
    )


def read_extent(data: bytes) -> tuple[int, int] | None:
    """The postings' (offset, length), None when inlined: `decode` less the statistics."""
    if data[0] & INLINED:
        return None
    info = decode(data)
    return info._offset, info._length
