"""A posting's positions as the compact codec keeps them ("packed"), made and read in C.

A packed value is plain `bytes` (not an object of a class of its own for each of a
segment's millions of postings: the garbage collector would track them all): its head, the
varint of count * 4 + width code, then the position gaps, each in 1, 2 or 4 little-endian
bytes (the width of the largest gap).  A block keeps the heads together, then the gaps
(`postblocks.py`).  Fixed widths let `bytes`, `array` and slicing do the work (a varint
per gap, made and read in Python, cost more CPU than whoosh's pickles); zlib takes back
most of what a fixed width wastes.  `compact_positions` makes whoosh's own value of the
same positions, for what whoosh's decoders read (a term's single posting, inlined in its
term info; a matcher's `value`).
"""

from __future__ import annotations

import sys
from array import array
from pickle import dumps, loads

from whoosh.system import pack_uint

from .varint import get as get_varint
from .varint import put as put_varint

WIDTHS = (1, 2, 4)
"""Bytes a gap, by width code."""
_TYPES = ("B", "H", "I" if array("I").itemsize == 4 else "L")
_SWAP = sys.byteorder == "big"
_COUNTS = tuple(pack_uint(n) for n in range(1024))


def compact_positions(count: int, deltas: list[int]) -> bytes:
    """A `Positions` value: the count, then the position deltas pickled with protocol 1 less
    its memo mark and its stop (`decode_positions` adds the stop): 4 bytes for one small
    position where whoosh's protocol 2 takes 9; any whoosh decodes both."""
    pickled = dumps(deltas, 1)
    head: bytes = _COUNTS[count] if count < 1024 else pack_uint(count)
    return head + pickled[:1] + pickled[3:-1]


def pack(count: int, deltas: list[int]) -> bytes:
    """The packed value of `count` positions, given as gaps (the first from 0)."""
    top = max(deltas)
    if top < 0x100:
        code = 0
        body = bytes(deltas)
    else:
        code = 1 if top < 0x10000 else 2
        numbers = array(_TYPES[code], deltas)
        if _SWAP:
            numbers.byteswap()
        body = numbers.tobytes()
    head = count * 4 + code
    if head < 0x80:
        return bytes((head,)) + body
    out = bytearray()
    put_varint(out, head)
    return bytes(out + body)


def from_whoosh(value: bytes) -> bytes:
    """The packed value of whoosh's `Positions` value (pickled gaps after a 4-byte count)."""
    deltas = loads(value[4:] if value.endswith(b".") else value[4:] + b".")
    return pack(len(deltas), deltas)


def to_whoosh(packed: bytes | tuple[int, bytes]) -> bytes:
    """whoosh's `Positions` value of a packed value, or of its (head, gaps' bytes) (what a
    term info's inlined posting holds)."""
    head, body = packed if isinstance(packed, tuple) else split(packed)
    return compact_positions(head >> 2, gaps(body, head))


def split(packed: bytes) -> tuple[int, bytes]:
    """(a value's head, its gaps' bytes)."""
    head = packed[0]
    if head < 0x80:
        return head, packed[1:]
    head, at = get_varint(packed, 0)
    return head, packed[at:]


def gaps(data: bytes, head: int) -> list[int]:
    """The gaps of a value's `head` from their bytes `data`."""
    code = head & 3
    if code == 0:
        return list(data)
    numbers = array(_TYPES[code])
    numbers.frombytes(data)
    if _SWAP:
        numbers.byteswap()
    return numbers.tolist()


def size(head: int) -> int:
    """Bytes of the gaps of a value's `head`."""
    return (head >> 2) * WIDTHS[head & 3]
