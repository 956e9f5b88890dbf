"""The searchable text of an exported page, for the ZIM's own full-text index.

A ZIM's full-text index holds what our own search index holds: the markup library's
extraction (`archiver_plugins.markup.text`), the one the index plugin uses, not a copy of it.
"""

from __future__ import annotations

from ..markup.text import Extracted, extract, sniff_encoding

__all__ = ["Extracted", "searchable_text"]

MAX_INDEXED_CHARS = 200_000
"""The longest text of one page given to the ZIM's full-text index."""


def searchable_text(content: bytes, content_type: str) -> Extracted:
    """Title, headings, description and main text of an exported page (HTML, as written)."""
    return extract(content, content_type, sniff_encoding(content, None), MAX_INDEXED_CHARS)
