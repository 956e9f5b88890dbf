"""The analyzers of the index, and the schema of its query language.

Indexing analyses every page with these analyzers (`store.make_document`, `terms`) and
hands the terms to the engine; `search` parses a query with whoosh's query parser over
`make_schema`, whose fields carry the same analyzers, so a query's terms are the page's.

whoosh's default tokenizer keeps a run of Chinese or Japanese characters as one token,
so a page would only be found by its whole sentence.  `CJKBigramFilter` splits such
runs into overlapping character pairs (the classic CJK bigram scheme, as Lucene's
CJKAnalyzer does) and leaves Latin words to the English stemmer.

A chain of whoosh filters passes every token through five generators; on a page of text
that is a quarter of whoosh's indexing time.  `OnePassAnalyzer` is the same chain whose
common calls run as one loop over the tokenizer's matches with a memo of what the chain
makes of each word (most words of a page were seen on earlier pages): the same terms,
positions and character offsets, in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import (
    CompositeAnalyzer,
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
    Token,
)
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.lang.porter import stem

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


WORDS = r"[\w\*]+(?:\.?[\w\*]+)*"
"""whoosh's default token pattern without its capturing group: the same matches."""
MEMO_SIZE = 50_000
"""Words remembered by the analyzers of one kind (about 150 bytes each); the memo starts
over when full."""
_MEMOS: dict[tuple[str, frozenset[str] | None, bool], dict[str, Any]] = {}
"""The memo of each kind of analyzer (pattern, stop words, stemming) in this process:
every writer unpickles its own schema, and its analyzers would learn a page's words anew."""

_Pieces = str | tuple[tuple[str, int, int], ...] | None
"""What the chain makes of one word: a term, (term, offset, length) pieces (a CJK run), or
None (a stop word)."""


class OnePassAnalyzer(CompositeAnalyzer):  # type: ignore[misc]
    """Tokenizer, lower-casing, optional stop words, CJK bigrams and optional stemming.

    Indexing and ordinary queries take the one-pass loop; calls the loop does not cover
    (stop words kept, no tokenizing, original text kept, no stemming) go through the
    chain of whoosh filters, which gives the same terms.  Pickled (in the index's table
    of contents) as its chain, without the memo, which the analyzers of the same chain in
    a process share.
    """

    def __init__(self, pattern: str = WORDS, stops: bool = False, stems: bool = False) -> None:
        chain: list[Any] = [RegexTokenizer(pattern), LowercaseFilter()]
        if stops:
            chain.append(StopFilter(minsize=1))
        chain.append(CJKBigramFilter())
        if stems:
            chain.append(StemFilter(cachesize=100_000))
        super().__init__(*chain)
        self._setup()

    def _setup(self) -> None:
        expression = self.items[0].expression
        self._finditer = expression.finditer
        # whole matches as strings, without match objects (a pattern without groups)
        self._findall = expression.findall if expression.groups == 0 else None
        stop_filters = [item for item in self.items if isinstance(item, StopFilter)]
        self._stops: frozenset[str] | None = stop_filters[0].stops if stop_filters else None
        self._stems = any(isinstance(item, StemFilter) for item in self.items)
        key = (expression.pattern, self._stops, self._stems)
        self._memo: dict[str, _Pieces] = _MEMOS.setdefault(key, {})

    def __getstate__(self) -> dict[str, Any]:
        return {"items": self.items}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.items = state["items"]
        self._setup()

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        no_morph: bool = False,
        **kwargs: Any,
    ) -> Iterator[Any]:
        if keeporiginal or not removestops or not tokenize or no_morph:
            return super().__call__(  # type: ignore[no-any-return]
                value,
                no_morph=no_morph,
                positions=positions,
                chars=chars,
                keeporiginal=keeporiginal,
                removestops=removestops,
                start_pos=start_pos,
                start_char=start_char,
                tokenize=tokenize,
                mode=mode,
                **kwargs,
            )
        return self._one_pass(value, positions, chars, start_pos, start_char, mode, kwargs)

    def _one_pass(
        self,
        value: str,
        positions: bool,
        chars: bool,
        start_pos: int,
        start_char: int,
        mode: str,
        kwargs: dict[str, Any],
    ) -> Iterator[Any]:
        token = Token(positions, chars, removestops=True, mode=mode, **kwargs)
        memo = self._memo
        decide = self._decide
        pos = start_pos  # a stop word before the first term still counts (whoosh renumbers after it)
        started = False
        if not chars and self._findall is not None:  # indexing: the words alone
            for word in self._findall(value):
                try:
                    pieces = memo[word]
                except KeyError:
                    pieces = decide(word)
                if pieces is None:
                    if not started:
                        pos += 1
                    continue
                started = True
                if isinstance(pieces, str):
                    token.text = pieces
                    token.pos = pos
                    pos += 1
                    yield token
                    continue
                for text, _, _ in pieces:
                    token.text = text
                    token.pos = pos
                    pos += 1
                    yield token
            return
        for match in self._finditer(value):
            try:
                pieces = memo[match.group()]
            except KeyError:
                pieces = decide(match.group())
            if pieces is None:
                if not started:
                    pos += 1
                continue
            started = True
            base = start_char + match.start()
            if isinstance(pieces, str):
                token.text = pieces
                token.pos = pos
                token.startchar = base
                token.endchar = start_char + match.end()
                pos += 1
                yield token
                continue
            for text, offset, length in pieces:
                token.text = text
                token.pos = pos
                token.startchar = base + offset
                token.endchar = base + offset + length
                pos += 1
                yield token

    @property
    def indexes_in_one_pass(self) -> bool:
        """`positions` gives what indexing through `__call__` would (a pattern without groups)."""
        return self._findall is not None

    def positions(self, value: str) -> dict[str, list[int]]:
        """Each term of `value` with its positions, as indexing numbers them (`_one_pass` from
        position 0): what whoosh's `Positions.word_values` collects from the tokens, without
        a token per word.  Needs `indexes_in_one_pass`."""
        findall = self._findall
        assert findall is not None
        memo = self._memo
        decide = self._decide
        found: dict[str, list[int]] = {}
        get = found.get
        pos = 0
        started = False
        for word in findall(value):
            try:
                pieces = memo[word]
            except KeyError:
                pieces = decide(word)
            if pieces is None:
                if not started:
                    pos += 1
                continue
            started = True
            if isinstance(pieces, str):
                held = get(pieces)
                if held is None:
                    found[pieces] = [pos]
                else:
                    held.append(pos)
                pos += 1
                continue
            for text, _, _ in pieces:
                held = get(text)
                if held is None:
                    found[text] = [pos]
                else:
                    held.append(pos)
                pos += 1
        return found

    def terms(self, value: str) -> str:
        """The terms of `value` as indexing makes them, in order, separated by spaces: what an
        engine indexes with a whitespace tokenizer (the same terms at the same positions as
        `positions` gives).  Needs `indexes_in_one_pass`."""
        findall = self._findall
        assert findall is not None
        memo = self._memo
        decide = self._decide
        out: list[str] = []
        add = out.append
        for word in findall(value):
            try:
                pieces = memo[word]
            except KeyError:
                pieces = decide(word)
            if pieces is None:
                continue
            if isinstance(pieces, str):
                add(pieces)
            else:
                out.extend(text for text, _, _ in pieces)
        return " ".join(out)

    def _decide(self, word: str) -> _Pieces:
        """What the filter chain makes of one word, remembered unless it is a CJK run: a run is
        a whole sentence, rarely seen twice, and its pieces take kilobytes."""
        pieces = self._chain(word)
        if isinstance(pieces, tuple):
            return pieces
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[word] = pieces
        return pieces

    def _chain(self, word: str) -> _Pieces:
        text = word.lower()
        if self._stops is not None and text in self._stops:
            return None
        if text.isascii() or not _CJK_RUN.search(text):
            return stem(text) if self._stems else text
        return tuple(
            (stem(piece) if self._stems else piece, offset, len(piece)) for piece, offset in _pieces(text)
        )


def text_analyzer() -> Any:
    """English words stemmed, stop words dropped, CJK runs as bigrams.

    A dot splits words (`asyncio.run` is `asyncio` and `run`, found as a phrase): page text
    joins inline elements as shown, and a dotted name must still be found by its parts.
    """
    return OnePassAnalyzer(r"\w+", stops=True, stems=True)


def plain_analyzer() -> Any:
    """Words of a URL or a title's spelling: lower-cased, not stemmed."""
    return OnePassAnalyzer(r"[^\W_]+")


def chain_text_analyzer() -> Any:
    """`text_analyzer` as a chain of whoosh filters: the reference `OnePassAnalyzer` is tested against."""
    return (
        RegexTokenizer(r"\w+")
        | LowercaseFilter()
        | StopFilter(minsize=1)
        | CJKBigramFilter()
        | StemFilter(cachesize=100_000)
    )


def chain_plain_analyzer() -> Any:
    return RegexTokenizer(r"[^\W_]+") | LowercaseFilter() | CJKBigramFilter()


def make_schema() -> Schema:
    """The fields of the query language with the analyzers indexing uses: what whoosh's query
    parser reads (`search.parse`); the engines keep their own schema of the same fields."""
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
