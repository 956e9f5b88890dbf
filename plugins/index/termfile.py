"""A segment's term dictionary in sorted, front-coded, compressed blocks.

whoosh's term file (`OrderedHashWriter`) keeps each term as its whole key, two 4-byte
length fields, its 23-byte term info and more, plus a hash slot and an ordered-index entry:
~85 bytes a term, the largest part of an index of pages full of identifiers and numbers.
Here the terms are written in key order in blocks of `BLOCK_TERMS`; each key keeps only
what it does not share with the one before (its shared length, then the rest), each value
(the compact term info of `terminfo.py`) its length and bytes, and the block is
zlib-compressed.  At the end, the block index (each block's first key and offset) and the
extras (whoosh's field map) are one compressed pickle, found by the fixed trailer.

A reader reads the block index once; a look-up is a bisect over the blocks' first keys,
then over the keys of one block, decompressed and kept in a small cache (a query looks up
a few terms, a prefix query walks the blocks in order).

    MAGIC | block ... | zlib(pickle((extras, first keys, offsets))) | offset, length, MAGIC
"""

from __future__ import annotations

import pickle
import struct
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from .varint import get as get_varint
from .varint import put as put_varint

MAGIC = b"ArT1"
BLOCK_TERMS = 64
"""Terms a block holds: zlib finds more to share in larger blocks, a look-up decodes a whole
block (~64 keys: a few tens of microseconds)."""
LEVEL = 6
"""zlib's level for the blocks: written once a segment, read a block per looked-up term."""
CACHED_BLOCKS = 16
"""Decoded blocks a reader keeps (a few KB each): a query looks up a few terms a segment."""
_TRAILER = struct.Struct("!QI4s")


class TermFileError(ValueError):
    """The term file is not one this module writes, or is cut short."""


class TermFileWriter:
    """Writes (key, value) pairs given in ascending key order."""

    def __init__(self, dbfile: Any) -> None:
        self.dbfile = dbfile
        self.extras: dict[str, Any] = {}
        self._keys: list[bytes] = []
        self._values: list[bytes] = []
        self._firsts: list[bytes] = []
        self._offsets: list[int] = []
        self._lastkey: bytes | None = None
        dbfile.write(MAGIC)
        self._pos = len(MAGIC)

    def add(self, key: bytes, value: bytes) -> None:
        if self._lastkey is not None and key <= self._lastkey:
            raise ValueError(f"Keys must increase: {self._lastkey!r}..{key!r}")
        self._lastkey = key
        self._keys.append(key)
        self._values.append(value)
        if len(self._keys) >= BLOCK_TERMS:
            self._write_block()

    def add_many(self, keys: list[bytes], values: list[bytes]) -> None:
        for key, value in zip(keys, values, strict=True):
            self.add(key, value)

    def _write_block(self) -> None:
        keys, values = self._keys, self._values
        if not keys:
            return
        out = bytearray()
        put = put_varint
        previous = b""
        for key, value in zip(keys, values, strict=True):
            shared = 0
            most = min(len(key), len(previous))
            while shared < most and key[shared] == previous[shared]:
                shared += 1
            put(out, shared)
            put(out, len(key) - shared)
            out += key[shared:]
            put(out, len(value))
            out += value
            previous = key
        data = zlib.compress(out, LEVEL)
        self.dbfile.write(data)
        self._firsts.append(keys[0])
        self._offsets.append(self._pos)
        self._pos += len(data)
        self._keys, self._values = [], []

    def close(self) -> None:
        self._write_block()
        self._offsets.append(self._pos)
        index = zlib.compress(pickle.dumps((self.extras, self._firsts, self._offsets), 4), LEVEL)
        self.dbfile.write(index)
        self.dbfile.write(_TRAILER.pack(self._pos, len(index), MAGIC))
        self.dbfile.close()


class TermFileReader:
    """Look-ups and in-order walks of a term file (`dbfile` as whoosh's storage opens it)."""

    def __init__(self, dbfile: Any, length: int) -> None:
        """Closes `dbfile` when it is not a whole term file."""
        self.dbfile = dbfile
        try:
            self._open(length)
        except BaseException:
            dbfile.close()
            raise
        self._cache: OrderedDict[int, tuple[list[bytes], list[bytes]]] = OrderedDict()

    def _open(self, length: int) -> None:
        dbfile = self.dbfile
        if length < len(MAGIC) + _TRAILER.size or dbfile.get(0, len(MAGIC)) != MAGIC:
            raise TermFileError("not a compact term file")
        offset, size, magic = _TRAILER.unpack(dbfile.get(length - _TRAILER.size, _TRAILER.size))
        if magic != MAGIC or offset + size + _TRAILER.size != length:
            raise TermFileError("term file cut short")
        extras, firsts, offsets = pickle.loads(zlib.decompress(dbfile.get(offset, size)))
        self.extras: dict[str, Any] = extras
        self._firsts: list[bytes] = firsts
        self._offsets: list[int] = offsets

    def block(self, number: int) -> tuple[list[bytes], list[bytes]]:
        """The keys and values of block `number`."""
        cache = self._cache
        found = cache.get(number)
        if found is not None:
            cache.move_to_end(number)
            return found
        start, end = self._offsets[number], self._offsets[number + 1]
        found = decode_block(zlib.decompress(self.dbfile.get(start, end - start)))
        cache[number] = found
        if len(cache) > CACHED_BLOCKS:
            cache.popitem(last=False)
        return found

    def _locate(self, key: bytes) -> tuple[int, int]:
        """(block, index in it) of the first key >= `key` (past the end: (blocks, 0))."""
        number = bisect_right(self._firsts, key) - 1
        if number < 0:
            return 0, 0
        keys = self.block(number)[0]
        at = bisect_left(keys, key)
        if at == len(keys):
            return number + 1, 0
        return number, at

    def get(self, key: bytes) -> bytes | None:
        """The value of `key`, None if absent."""
        number = bisect_right(self._firsts, key) - 1
        if number < 0:
            return None
        keys, values = self.block(number)
        at = bisect_left(keys, key)
        if at < len(keys) and keys[at] == key:
            return values[at]
        return None

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) is not None

    def items_from(self, key: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) from the first key >= `key` to the end of the file."""
        number, at = self._locate(key)
        for block in range(number, len(self._firsts)):
            keys, values = self.block(block) if block == number else self._uncached(block)
            yield from zip(keys[at:], values[at:], strict=True)
            at = 0

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        for block in range(len(self._firsts)):
            keys, values = self._uncached(block)
            yield from zip(keys, values, strict=True)

    def _uncached(self, number: int) -> tuple[list[bytes], list[bytes]]:
        """Block `number` decoded without filling the cache (walks of every term)."""
        found = self._cache.get(number)
        if found is not None:
            return found
        start, end = self._offsets[number], self._offsets[number + 1]
        return decode_block(zlib.decompress(self.dbfile.get(start, end - start)))

    def close(self) -> None:
        self._cache.clear()
        self.dbfile.close()


def decode_block(data: bytes) -> tuple[list[bytes], list[bytes]]:
    keys: list[bytes] = []
    values: list[bytes] = []
    get = get_varint
    previous = b""
    at = 0
    end = len(data)
    while at < end:
        shared, at = get(data, at)
        rest, at = get(data, at)
        previous = previous[:shared] + data[at : at + rest]
        at += rest
        size, at = get(data, at)
        keys.append(previous)
        values.append(data[at : at + size])
        at += size
    if at != end:
        raise TermFileError("term block cut short")
    return keys, values
