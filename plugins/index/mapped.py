"""Segment files read in place from a memory map, never copied.

whoosh maps a compound segment file and then wraps each file inside it in a ``BufferFile``,
whose ``BytesIO`` copies the whole sub-file: every search process held a private copy of
every term dictionary and posting file it opened (1.5 GB of RSS and half a second of copying
for the first query over a 100,000-page index). Here the sub-files are views of one shared,
read-only map: the kernel pages in what a query touches, and the pages stay shared with the
page cache.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile


class _MemoryReader:
    """The part of a file object whoosh reads through (read, seek, tell), over a buffer."""

    def __init__(self, buf: memoryview) -> None:
        self._buf = buf
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(self._pos + size, len(self._buf))
        data = bytes(self._buf[self._pos : end])
        self._pos = max(end, self._pos)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(self._pos + size, len(self._buf))
        at = self._pos
        while at < end:  # in windows: a line is short, the rest of a file may be gigabytes
            window = bytes(self._buf[at : min(at + 4096, end)])
            newline = window.find(b"\n")
            if newline >= 0:
                return self.read(at + newline + 1 - self._pos)
            at += len(window)
        return self.read(end - self._pos)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: len(self._buf)}[whence]
        self._pos = max(base + offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._buf = memoryview(b"")


class MappedFile(BufferFile):  # type: ignore[misc]
    """A ``BufferFile`` whose reads and sub-files are views of the buffer, not copies."""

    def __init__(self, buf: memoryview, name: str | None = None, onclose: Any = None) -> None:
        self._buf = buf
        self._name = name
        self.file = _MemoryReader(buf)
        self.onclose = onclose
        self.is_real = False
        self.is_closed = False

    def subset(self, position: int, length: int, name: str | None = None) -> MappedFile:
        return MappedFile(self._buf[position : position + length], name=name or self._name)


class MappedStorage(FileStorage):  # type: ignore[misc]
    """A folder of segments for searching: each file opened is one read-only map.

    ``supports_mmap`` stays false so that whoosh's compound storage takes each sub-file from
    ``MappedFile.subset`` instead of mapping the file again and copying its parts."""

    def __init__(self, path: str) -> None:
        super().__init__(path, supports_mmap=False)

    def open_file(self, name: str, **kwargs: Any) -> Any:
        with open(self._fpath(name), "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return super().open_file(name, **kwargs)
            mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

        def unmap(_file: Any) -> None:
            # A view still held by a reader keeps the map; it goes when the view does.
            with contextlib.suppress(BufferError):
                mapping.close()

        return MappedFile(memoryview(mapping), name=name, onclose=unmap)
