"""Stored fields written for less: whoosh's own column, pickled and compressed cheaper.

whoosh stores a document's stored fields as their pickle (protocol 2) compressed by zlib at
level 3.  Protocol 2 has no bytes type: the page's `excerpt`, already zlib-compressed text,
is pickled as a latin-1 string whose UTF-8 doubles every byte above 127, and zlib then
works to undo that: on the bench pages that was a tenth of the writer's time.  Here the
pickle is protocol 3 (bytes as they are) and zlib's level 1; whoosh's reader unpickles
any protocol and decompresses any level, so the column is whoosh's `STORED_COLUMN`.
"""

from __future__ import annotations

import zlib
from pickle import dumps
from typing import Any

from whoosh.codec.whoosh3 import STORED_COLUMN, W3PerDocWriter
from whoosh.columns import VarBytesColumn

PROTOCOL = 3
LEVEL = 1


class _StoredWriter(VarBytesColumn.Writer):  # type: ignore[misc]
    def add(self, docnum: int, value: Any) -> None:
        data = b"" if value is None else zlib.compress(dumps(value, PROTOCOL), LEVEL)
        super().add(docnum, data)


class PerDocWriter(W3PerDocWriter):  # type: ignore[misc]
    """whoosh 3's per-document writer with `_StoredWriter` for the stored fields."""

    def _create_column(self, fieldname: str, column: Any) -> None:
        if fieldname == "_stored" and column is STORED_COLUMN:
            self._colwriters[fieldname] = _StoredWriter(self._cols.create_file(fieldname))
            return
        super()._create_column(fieldname, column)
