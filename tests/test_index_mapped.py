"""Index plugin: a search reads segment files in place from one map, without private copies."""

from __future__ import annotations

import gc
import io
import os
import random
from pathlib import Path
from typing import Any

from archiver_plugins.index.mapped import MappedFile, _MemoryReader
from archiver_plugins.index.search import close_all, search
from archiver_plugins.index.status import status_lines
from archiver_plugins.index.store import Capture, open_or_create, whoosh_dir
from archiver_plugins.index.writer import Batcher
from whoosh.filedb.structfile import BufferFile


def test_the_reader_reads_as_a_file_does() -> None:
    data = bytes(random.Random(3).randrange(256) for _ in range(5000)) + b"line one\nline two\n"
    mapped, plain = _MemoryReader(memoryview(data)), io.BytesIO(data)
    rng = random.Random(5)
    for _ in range(2000):
        operation = rng.choice(["read", "seek", "seek_cur", "seek_end", "readline"])
        if operation == "read":
            size = rng.choice([-1, 0, 1, 7, 100, 6000])
            assert mapped.read(size) == plain.read(size)
        elif operation == "readline":
            assert mapped.readline() == plain.readline()
        elif operation == "seek":
            position = rng.randrange(len(data) + 10)
            assert mapped.seek(position) == plain.seek(position)
        elif operation == "seek_cur":
            offset = rng.randrange(50)
            assert mapped.seek(offset, os.SEEK_CUR) == plain.seek(offset, os.SEEK_CUR)
        else:
            assert mapped.seek(-5, os.SEEK_END) == plain.seek(-5, os.SEEK_END)
        assert mapped.tell() == plain.tell()


def test_a_sub_file_is_a_view_of_its_parent() -> None:
    parent = MappedFile(memoryview(b"0123456789abcdef"), name="parent")
    child = parent.subset(4, 6)
    assert child.read(3) == b"456"
    assert child.get(1, 4) == b"5678"
    assert child.read() == b"789"
    assert child._buf.obj is parent._buf.obj


def reachable(root: Any, kind: type, limit: int = 200_000) -> list[Any]:
    """Objects of `kind` reachable from `root` through references (a bounded walk)."""
    seen: set[int] = set()
    todo, found = [root], []
    while todo and len(seen) < limit:
        item = todo.pop()
        if id(item) in seen or isinstance(item, (str, bytes, int, float, type)):
            continue
        seen.add(id(item))
        if isinstance(item, kind):
            found.append(item)
        todo.extend(gc.get_referents(item))
    return found


def test_a_search_holds_no_copy_of_a_segment_file(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    ix, _ = open_or_create(whoosh_dir(archive))
    batcher = Batcher(ix, batch_size=50, batch_seconds=60, max_chars=100_000)
    for n in range(120):
        words = " ".join(f"word{(n * 7 + k) % 400}" for k in range(200))
        html = f"<html><head><title>Page {n}</title></head><body><p>{words}</p></body></html>"
        batcher.add(
            Capture(f"http://site.test/{n}", "20240501120003", 200, "text/html", "utf-8", html.encode())
        )
    batcher.commit()
    ix.close()

    assert search(archive, "word7", with_snippets=False).total > 0
    from archiver_plugins.index import search as search_module

    shared = search_module._shared[str(archive)]
    files = reachable(shared._searcher, BufferFile)
    close_all()
    assert files, "the searcher reads no segment file"
    assert all(isinstance(f, MappedFile) for f in files), {type(f).__name__ for f in files}
    assert dict(status_lines(archive) or [])["pages searchable"] == 120
