"""Values cut for SQLite's ``IN (...)``: one statement per slice, bound parameters kept far
below SQLite's limit on them.  Used by the frontier's state and the index's spool."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

Value = TypeVar("Value")


def in_chunks(values: Sequence[Value], size: int = 500) -> Iterator[tuple[list[Value], str]]:
    """`values` in slices of `size`, each with the ``?,?,...`` of its ``IN (...)``."""
    for start in range(0, len(values), size):
        chunk = list(values[start : start + size])
        yield chunk, ",".join("?" * len(chunk))
