"""The index plugin's main-text extraction, as the ZIM and EPUB exports use it.

The only module of the mirror plugin that imports the index plugin: a chapter of an EPUB
is a page's main text, and a ZIM's full-text index holds what our own search index holds,
so both take them from `archiver_plugins.index.extract` rather than a copy of it.
"""

from __future__ import annotations

from ..index.extract import Extracted, extract, main_content, sniff_encoding

__all__ = ["Extracted", "main_content", "searchable_text"]

MAX_INDEXED_CHARS = 200_000
"""The longest text of one page given to the ZIM's full-text index."""


def searchable_text(content: bytes, content_type: str) -> Extracted:
    """Title, headings, description and main text of an exported page (HTML, as written)."""
    return extract(content, content_type, sniff_encoding(content, None), MAX_INDEXED_CHARS)
