"""The index's schema and analyzers, shared by the writer, `reindex` and `search`.

whoosh's default tokenizer keeps a run of Chinese or Japanese characters as one token,
so a page would only be found by its whole sentence.  `CJKBigramFilter` splits such
runs into overlapping character pairs (the classic CJK bigram scheme, as Lucene's
CJKAnalyzer does) and leaves Latin words to the English stemmer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import (
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema

SCHEMA_VERSION = 1

_CJK_RUN = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff]+"
)


class CJKBigramFilter(Filter):  # type: ignore[misc]
    """Turn runs of CJK characters into overlapping bigrams; other tokens pass unchanged.

    A lone CJK character stays a unigram.  Positions are renumbered so that a phrase
    query over the bigrams of a word ("中文搜索" -> 中文 文搜 搜索) matches only adjacent pairs.
    """

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        shift = 0
        for token in tokens:
            text = token.text
            if text.isascii() or not _CJK_RUN.search(text):
                if token.positions:
                    token.pos += shift
                yield token
                continue
            base_pos = token.pos + shift if token.positions else 0
            base_char = token.startchar if token.chars else 0
            count = 0
            for piece, start in _pieces(text):
                token.text = piece
                if token.positions:
                    token.pos = base_pos + count
                if token.chars:
                    token.startchar = base_char + start
                    token.endchar = base_char + start + len(piece)
                count += 1
                yield token
            shift += max(count - 1, 0)


def _pieces(text: str) -> Iterator[tuple[str, int]]:
    """(piece, offset) for the Latin runs and the CJK bigrams of one token."""
    last = 0
    for match in _CJK_RUN.finditer(text):
        if match.start() > last:
            yield text[last : match.start()], last
        run = match.group()
        if len(run) == 1:
            yield run, match.start()
        else:
            for i in range(len(run) - 1):
                yield run[i : i + 2], match.start() + i
        last = match.end()
    if last < len(text):
        yield text[last:], last


def text_analyzer() -> Any:
    """English words stemmed, stop words dropped, CJK runs as bigrams.

    A dot splits words (`asyncio.run` is `asyncio` and `run`, found as a phrase): page text
    joins inline elements as shown, and a dotted name must still be found by its parts.
    """
    return (
        RegexTokenizer(r"\w+")
        | LowercaseFilter()
        | StopFilter(minsize=1)
        | CJKBigramFilter()
        | StemFilter(cachesize=100_000)
    )


def plain_analyzer() -> Any:
    """Words of a URL or a title's spelling: lower-cased, not stemmed."""
    return RegexTokenizer(r"[^\W_]+") | LowercaseFilter() | CJKBigramFilter()


def make_schema() -> Schema:
    """One document per URL: the newest successful capture of an HTML or text page.

    Only `title`, the URL, the capture time and the small columns are stored as they
    are; the text kept for snippets is stored zlib-compressed in `excerpt`.
    """
    analyzer = text_analyzer()
    return Schema(
        url=ID(stored=True, unique=True),
        urlwords=TEXT(analyzer=plain_analyzer(), multitoken_query="phrase"),
        title=TEXT(analyzer=analyzer, stored=True, multitoken_query="phrase"),
        headings=TEXT(analyzer=analyzer, multitoken_query="phrase"),
        description=TEXT(analyzer=analyzer, stored=True, multitoken_query="phrase"),
        text=TEXT(analyzer=analyzer, multitoken_query="phrase"),
        spelling=TEXT(analyzer=plain_analyzer(), phrase=False),
        site=KEYWORD(lowercase=True),
        host=STORED(),
        content_type=ID(stored=True),
        status=STORED(),
        time=ID(stored=True),
        excerpt=STORED(),
    )


SEARCH_FIELDS = ("title", "headings", "description", "text", "urlwords")
FIELD_BOOSTS = {"title": 6.0, "headings": 2.5, "description": 1.5, "text": 1.0, "urlwords": 1.5}
FIELD_ALIASES = {"urlwords": ["url"], "site": ["host"], "headings": ["heading"]}
USER_FIELDS = ("title", "url", "site", "headings", "description", "text")


def site_terms(host: str) -> str:
    """'docs.python.org' -> 'docs.python.org python.org': `site:python.org` matches subdomains."""
    host = host.lower().strip(".")
    if host.startswith("[") or host.replace(".", "").isdigit():
        return host
    labels = host.split(".")
    return " ".join(".".join(labels[i:]) for i in range(max(len(labels) - 1, 1)))
