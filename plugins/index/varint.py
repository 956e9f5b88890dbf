"""Unsigned LEB128 integers: 7 bits a byte, small numbers in one byte.

The compact term dictionary and posting blocks (`termfile.py`, `postblocks.py`) hold mostly
small numbers (key prefix lengths, document id gaps, position gaps, counts) where whoosh
writes fixed 4- and 8-byte fields or pickle opcodes.
"""

from __future__ import annotations

import re

_LONG = re.compile(rb"[\x80-\xff]")
"""A byte of a number of more than one byte."""


def put(out: bytearray, number: int) -> None:
    """Append `number` (>= 0) to `out`."""
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)


def put_many(out: bytearray, numbers: list[int]) -> None:
    """Append each of `numbers` (>= 0); numbers below 128 (most gaps) in one C call."""
    if not numbers or max(numbers) < 0x80:
        out += bytes(numbers)
        return
    for number in numbers:
        while number > 0x7F:
            out.append((number & 0x7F) | 0x80)
            number >>= 7
        out.append(number)


def get(data: bytes, at: int) -> tuple[int, int]:
    """(the number at `at`, where the next item starts)."""
    byte = data[at]
    if byte < 0x80:
        return byte, at + 1
    number = byte & 0x7F
    shift = 7
    at += 1
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7


def get_many(data: bytes, at: int, count: int) -> tuple[list[int], int]:
    """(`count` numbers from `at`, where the next item starts).  The one-byte numbers
    between two longer ones (most of a block's: a block's first id gap is often long, the
    others short) are taken in one slice."""
    chunk = data[at : at + count]
    if len(chunk) == count and (not chunk or max(chunk) < 0x80):
        return list(chunk), at + count
    found: list[int] = []
    search = _LONG.search
    while count:
        long = search(data, at, at + count)
        if long is None:
            found += data[at : at + count]
            return found, at + count
        start = long.start()
        found += data[at:start]
        count -= start - at + 1
        number, at = get(data, start)
        found.append(number)
    return found, at
