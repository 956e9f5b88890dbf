"""Searching an archive's index: the API behind `archiver search` and the web UI.

`search(archive, query)` parses the query language (words, "phrases", AND/OR/NOT,
-word, title:, url:, site:HOST, prefixes), bounds what could run away (a wildcard that
expands to too many words, a search that runs too long), and returns ranked hits with
HTML snippets whose text is escaped, so they are safe to embed.

The query is parsed by whoosh's query parser, with the analyzers that indexing uses, and
the parsed tree is handed to the archive's engine (`engine.Engine`: tantivy, or stock
whoosh), which translates it.  Keyword filters (site, content type, capture-time range)
restrict the documents the query is scored over, so the count and the pages are exact.
Each archive's index is opened once per process and reused until the index changes (a
crawl's writer committed, or `reindex` swapped in a new index); searches of one archive
take turns on it.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import itertools
import logging
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from whoosh import query
from whoosh.qparser import (
    AndGroup,
    FieldAliasPlugin,
    MultifieldParser,
    PlusMinusPlugin,
    syntax,
)

from archiver.api import ArchiveError, ArchiverError, plural

from .engine import DamagedIndexError, Engine, Found
from .schema import FIELD_ALIASES, FIELD_BOOSTS, SEARCH_FIELDS, USER_FIELDS, make_schema, text_analyzer
from .spool import pending_in
from .store import DEFAULT_MAX_CHARS, MARKER, damaged_message, index_root, open_engine, present_dir

MAX_EXPANSION = 2_000
"""A wildcard or prefix may stand for at most this many distinct words."""
WILDCARD_SCAN = 200_000
"""Words a wildcard's pattern is tried on, at most (those after its literal start)."""
DEFAULT_TIME_LIMIT = 5.0
MAX_NESTING = 50
"""Brackets deeper than this are refused: whoosh parses them recursively."""
_SNIPPET_WINDOW = 160
log = logging.getLogger(__name__)
_OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE"})
_WORD = re.compile(r"[^\W_]+")
_URL = re.compile(r"https?://\S+")
_DANGLING = re.compile(r"^(?:(?:AND|OR)\s+)+|(?:\s+(?:AND|OR|NOT))+$")
_SITE = re.compile(r"(?<![^\s(])((?:site|host):)('[^']*'|\"[^\"]*\"|[^\s()]+)")
_DIGITS = re.compile(r"\d{0,14}")
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+-]*/(?:[a-z0-9][a-z0-9.+-]*)?")
OPEN_ARCHIVES = 8
"""Indexes kept open at once (least recently searched closed first)."""
_QUERY_SCHEMA: list[Any] = []


class EmptyIndexError(ArchiveError):
    """The index exists but holds no page (an empty archive, or a crawl just started)."""


class QueryError(ArchiverError):
    """A query that cannot run as written (syntax, only stop words, too broad)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class Hit:
    rank: int
    url: str
    title: str
    time: str
    """Capture time, 14 digits UTC: with `url`, finds the record through the CDXJ index."""
    snippet: str
    """HTML: text escaped, matches in ``<b class="match termN">``; '' when not asked for."""
    score: float
    host: str
    content_type: str
    status: int


@dataclass(frozen=True)
class SearchResults:
    query: str
    total: int
    page: int
    pages: int
    limit: int
    hits: list[Hit]
    suggestion: str | None = None
    """A respelled query when some words match nothing ("did you mean")."""
    timed_out: bool = False
    """The time limit stopped the search: `hits` are the best found by then."""
    pending: int = 0
    """Pages fetched but not indexed yet (a running or interrupted crawl)."""
    notes: list[str] = field(default_factory=list)
    elapsed: float = 0.0


@dataclass(frozen=True, slots=True)
class Filters:
    """Which documents a query may match, whatever their score."""

    site: str = ""
    """A host: pages on it and on its subdomains."""
    content_type: str = ""
    """A media type (``text/html``), or a family ending in ``/`` (``text/``)."""
    time_from: str = ""
    """Earliest capture time, 14 digits UTC (inclusive)."""
    time_to: str = ""
    """Latest capture time, 14 digits UTC (inclusive)."""

    @classmethod
    def make(cls, site: str = "", content_type: str = "", time_from: str = "", time_to: str = "") -> Filters:
        """Checked and normalized: a port, a scheme or a path around the host are dropped;
        a time may be given to any precision (``2024``, ``202405``, ...)."""
        host = _host(site) if site.strip() else ""
        kind = content_type.strip().lower()
        if kind and not _MEDIA_TYPE.fullmatch(kind):
            raise QueryError(f"not a content type: {content_type!r} (such as text/html, or text/)")
        start, end = time_from.strip(), time_to.strip()
        for stamp in (start, end):
            if not _DIGITS.fullmatch(stamp):
                raise QueryError(f"not a capture time: {stamp!r} (up to 14 digits, YYYYMMDDhhmmss)")
        start = start.ljust(14, "0") if start else ""
        end = end.ljust(14, "9") if end else ""
        if start and end and start > end:
            raise QueryError(f"the time range is empty: {start} is after {end}")
        return cls(host, kind, start, end)

    def __bool__(self) -> bool:
        return bool(self.site or self.content_type or self.time_from or self.time_to)


def _host(site: str) -> str:
    text = site.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0].split("@")[-1]
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    text = text.strip(".")
    if not text or any(ch.isspace() for ch in text):
        raise QueryError(f"not a host name: {site!r}")
    return text


def search(
    archive: Path | str,
    query_text: str,
    limit: int = 10,
    page: int = 1,
    with_snippets: bool = True,
    time_limit: float = DEFAULT_TIME_LIMIT,
    *,
    site: str = "",
    content_type: str = "",
    time_from: str = "",
    time_to: str = "",
) -> SearchResults:
    """Run `query_text` against the index of `archive`; raises an ArchiverError on bad input.

    `site`, `content_type`, `time_from` and `time_to` keep only the pages that pass them
    (see `Filters`); with a filter, an empty `query_text` lists every page that passes.
    Safe to call from several threads at once.
    """
    started = time.monotonic()
    archive = Path(archive)
    if limit < 1 or page < 1:
        raise QueryError("--limit and --page must be at least 1")
    filters = Filters.make(site, content_type, time_from, time_to)
    if not query_text.strip() and not filters:
        raise QueryError("the query is empty")
    while True:
        shared = _open(archive)
        with shared.lock:
            fresh = not shared.is_open()
            try:
                index, fresh = shared.current()
                return _run(archive, index, shared, query_text, filters, limit, page, with_snippets,
                            time_limit, started)  # fmt: skip
            except (DamagedIndexError, ValueError, OSError) as exc:
                # a writer may have merged away a segment this reader had not opened yet:
                # open the index again once before calling it damaged
                shared.close()
                if fresh:
                    raise DamagedIndexError(damaged_message(archive)) from exc


class _Shared:
    """One archive's open index, used by one thread at a time (`lock`)."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.lock = threading.Lock()
        self._index: Engine | None = None
        self._folder_id: tuple[str, int] | None = None
        self._texts: Any = None

    def page_text(self, url: str, time: str) -> str:
        """A hit's page text for its snippet, from its WARC record (`pagetext`)."""
        if self._texts is None:
            from .pagetext import PageTexts

            self._texts = PageTexts(self.archive, DEFAULT_MAX_CHARS)
        return str(self._texts.text(url, time))

    def is_open(self) -> bool:
        return self._index is not None

    def current(self) -> tuple[Engine, bool]:
        """The index as last committed; True when it was opened just now."""
        folder = present_dir(self.archive)
        try:
            folder_id = (folder.name, folder.stat().st_ino) if folder is not None else None
        except FileNotFoundError:
            folder_id = None
        if self._index is not None and folder_id == self._folder_id:
            self._index.refresh()  # reuses the unchanged segments
            return self._index, False
        self.close()  # first use, or `reindex` put a new index in place
        self._index = open_engine(self.archive)
        self._index.refresh()
        self._folder_id = folder_id
        return self._index, True

    def close(self) -> None:
        index, self._index, self._folder_id = self._index, None, None
        with contextlib.suppress(Exception):
            if index is not None:
                index.close()


_shared: OrderedDict[str, _Shared] = OrderedDict()
_shared_lock = threading.Lock()


def _open(archive: Path) -> _Shared:
    key = str(archive.resolve())
    evicted: list[_Shared] = []
    with _shared_lock:
        shared = _shared.get(key)
        if shared is None:
            shared = _shared[key] = _Shared(archive)
            while len(_shared) > OPEN_ARCHIVES:
                evicted.append(_shared.popitem(last=False)[1])
        else:
            _shared.move_to_end(key)
    for old in evicted:
        with old.lock:
            old.close()
    return shared


@atexit.register
def close_all() -> None:
    """Close every index opened by `search` (they are reopened on the next search)."""
    with _shared_lock:
        open_now = list(_shared.values())
        _shared.clear()
    for shared in open_now:
        with shared.lock:
            shared.close()


def query_schema() -> Any:
    """The whoosh schema the query parser reads: the fields of the query language, each
    with the analyzer indexing uses (`schema.make_schema`), made once per process."""
    if not _QUERY_SCHEMA:
        _QUERY_SCHEMA.append(make_schema())
    return _QUERY_SCHEMA[0]


def make_parser(schema: Any) -> MultifieldParser:
    parser = MultifieldParser(list(SEARCH_FIELDS), schema, fieldboosts=FIELD_BOOSTS, group=AndGroup)
    parser.add_plugin(FieldAliasPlugin(FIELD_ALIASES))
    # `-word` excludes only at the start of a word: `utf-8` and `non-blocking` are words
    parser.add_plugin(PlusMinusPlugin(plusexpr=r"(?<![^\s(])\+", minusexpr=r"(?<![^\s(])-"))
    return parser


def _quote_sites(query_text: str) -> str:
    """`site:HOST[:PORT]` as the --site filter reads it: the host alone, quoted so dots and
    colons stay in one term."""

    def quoted(match: re.Match[str]) -> str:
        value = match.group(2).strip("'\"")
        return f"{match.group(1)}'{_host(value)}'" if value else match.group(0)

    return _SITE.sub(quoted, query_text)


def _nesting(query_text: str) -> int:
    depth = deepest = 0
    for char in query_text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(depth - 1, 0)
    return deepest


def parse(schema: Any, query_text: str) -> Any:
    """The whoosh query for `query_text`, or a QueryError saying what is wrong with it."""
    stripped = query_text.strip()
    if _URL.fullmatch(stripped):
        return query.Term("url", stripped)
    if _nesting(stripped) > MAX_NESTING:
        raise QueryError(f"the query nests brackets more than {MAX_NESTING} deep; simplify it")
    query_text = _quote_sites(_DANGLING.sub("", stripped) or stripped)
    parser = make_parser(schema)
    try:
        _check_syntax(parser, query_text)
        parsed = parser.parse(query_text)
    except QueryError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, NotImplementedError) as exc:
        # whoosh's parser fails this way on some operator sequences; its error names nothing
        log.debug("whoosh could not parse %r: %r", stripped, exc)
        raise QueryError(
            f"cannot read the query {stripped!r}: check its AND/OR/NOT and brackets, or put it in quotes"
        ) from None
    leaves = list(_leaves(parsed))
    only_url_words = all(getattr(leaf, "fieldname", None) == "urlwords" for leaf in leaves)
    if not leaves or (only_url_words and "url:" not in query_text):
        raise QueryError(
            f"nothing to search for in {query_text!r}: very common words (the, of, and, ...) "
            "are not indexed; add a more specific word"
        )
    return parsed


def _two_operators(query_text: str) -> str | None:
    """The first two operators in a row (``NOT NOT``, ``AND OR``), outside quotes, or None.

    ``AND NOT`` and ``OR NOT`` are one operator each; any other pair leaves the first one
    without a word to act on, which whoosh's parser answers with an internal error.
    """
    unquoted = re.sub(r'"[^"]*"', " x ", query_text)
    words = re.findall(r"[^\s()]+", unquoted)
    for first, second in itertools.pairwise(words):
        if first in _OPERATORS and second in _OPERATORS and not (first in ("AND", "OR") and second == "NOT"):
            return f"{first} {second}"
    return None


def _check_syntax(parser: MultifieldParser, query_text: str) -> None:
    pair = _two_operators(query_text)
    if pair is not None:
        raise QueryError(
            f"cannot read the query {query_text!r}: {pair} is two operators in a row;"
            " drop one, or write the words in lower case to search for them"
        )
    tree = parser.process(query_text)
    for node in _nodes(tree):
        if isinstance(node, syntax.ErrorNode):
            raise QueryError(f"cannot read the query {query_text!r}: {node.message}")
    known = set(USER_FIELDS) | set(SEARCH_FIELDS) | {a for v in FIELD_ALIASES.values() for a in v}
    for match in re.finditer(r"(?:^|[\s(])([A-Za-z_]+):(?!//)", query_text):
        name = match.group(1)
        if name not in known:
            raise QueryError(
                f"unknown field {name}: in the query (fields: {', '.join(USER_FIELDS)}); "
                "put the whole thing in quotes to search for it as text"
            )


def _nodes(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, syntax.GroupNode):
        for child in node:
            yield from _nodes(child)


def _leaves(q: Any) -> Iterator[Any]:
    if q.is_leaf():
        if q is not query.NullQuery:
            yield q
        return
    for child in q.children():
        yield from _leaves(child)


def _expansions(q: Any, index: Engine, deadline: float) -> dict[tuple[str, str], list[str]]:
    """The words each wildcard or prefix of `q` stands for; a clear error when it stands for
    too many or takes too long to expand."""
    found: dict[tuple[str, str], list[str]] = {}
    for leaf in _leaves(q):
        if not isinstance(leaf, (query.Prefix, query.Wildcard)):
            continue
        text = str(leaf.text)
        if isinstance(leaf, query.Prefix):
            words = [term for term, _ in index.terms_with_prefix(leaf.fieldname, text, MAX_EXPANSION + 1)]
        else:
            start = re.split(r"[*?]", text, maxsplit=1)[0]
            scanned = index.terms_with_prefix(leaf.fieldname, start, WILDCARD_SCAN)
            pattern = re.compile(fnmatch.translate(text))
            words = [term for term, _ in scanned if pattern.match(term)]
            if len(scanned) >= WILDCARD_SCAN and len(words) <= MAX_EXPANSION:
                raise QueryError(
                    f"{text!r} takes too long to expand; make it more specific "
                    "(for example a word start like 'asyn*' instead of '*syn*')"
                )
        if len(words) > MAX_EXPANSION:
            raise QueryError(
                f"{text!r} matches more than {MAX_EXPANSION:,} different words; "
                "make it more specific (a longer prefix, fewer wildcards)"
            )
        if time.monotonic() > deadline:
            raise QueryError(f"{text!r} takes too long to expand; make it more specific")
        found[(leaf.fieldname, text)] = words
    return found


def _run(
    archive: Path,
    index: Engine,
    shared: _Shared,
    query_text: str,
    filters: Filters,
    limit: int,
    page: int,
    with_snippets: bool,
    time_limit: float,
    started: float,
) -> SearchResults:
    notes: list[str] = []
    if (index_root(archive) / MARKER).exists():
        notes.append(
            f"the index was rebuilt after damage and misses older pages; run: archiver reindex {archive}"
        )
    pending = pending_in(index_root(archive) / "spool.sqlite")
    if index.pages() == 0:
        waiting = f" ({plural(pending, 'page')} waiting to be indexed)" if pending else ""
        raise EmptyIndexError(f"the search index of {archive} holds no pages yet{waiting}")
    parsed = parse(query_schema(), query_text) if query_text.strip() else query.Every()
    deadline = started + time_limit
    expansions = _expansions(parsed, index, deadline)
    try:
        ranked = index.search(parsed, expansions, filters or None, page * limit, deadline)
    except ValueError as exc:  # a part of the query the engine has no counterpart for
        log.debug("cannot run %r: %r", query_text, exc)
        raise QueryError(f"cannot run the query {query_text!r}; simplify it, or put it in quotes") from None
    total = ranked.total
    pages = max((total + limit - 1) // limit, 1)
    hits: list[Hit] = []
    shown = ranked.found[(page - 1) * limit : page * limit]
    if shown:
        patterns = _snippet_patterns(parsed, expansions) if with_snippets else None
        for rank, found in enumerate(shown, start=(page - 1) * limit + 1):
            hits.append(_hit(rank, found, patterns, shared.page_text))
    suggestion = None
    if total == 0 and query_text.strip():
        suggestion = suggest(index, query_text)
    return SearchResults(
        query=query_text,
        total=total,
        page=page,
        pages=pages,
        limit=limit,
        hits=hits,
        suggestion=suggestion,
        timed_out=ranked.timed_out,
        pending=pending,
        notes=notes,
        elapsed=time.monotonic() - started,
    )


def _hit(rank: int, found: Found, patterns: _Patterns | None, page_text: Callable[[str, str], str]) -> Hit:
    fields = found.fields
    snippet = ""
    if patterns is not None:
        text = _stored_text(fields.get("excerpt"), patterns)
        if text is None:
            text = page_text(fields["url"], fields.get("time") or "")
        snippet = _snippet(text, fields, patterns)
    return Hit(
        rank=rank,
        url=fields["url"],
        title=fields.get("title") or "",
        time=fields.get("time") or "",
        snippet=snippet,
        score=found.score,
        host=fields.get("host") or "",
        content_type=fields.get("content_type") or "",
        status=int(fields.get("status") or 0),
    )


@dataclass(frozen=True, slots=True)
class _Patterns:
    """Where a query's words occur in a page's text: phrases first, then single words.

    The patterns find the windows of text worth showing; what is marked in them is decided
    on the analyzed tokens (`_marks`), as the index matched them."""

    phrase: re.Pattern[str] | None
    words: re.Pattern[str] | None
    strict: bool
    phrases: tuple[tuple[str, ...], ...] = ()
    """The terms of each phrase of the query, in order."""
    loose: frozenset[str] = frozenset()
    """The terms of the query's other words (and of its prefixes and wildcards)."""
    terms: frozenset[str] = frozenset()
    """Every term of the query, its phrases' included."""


def _stem_prefix(word: str) -> str:
    if len(word) > 4 and word.endswith("i"):
        return word[:-1]  # porter: happy -> happi
    return word


def _word_regex(word: str) -> str:
    return (r"\b" + re.escape(word)) if word.isascii() else re.escape(word)


def _leaf_terms(leaf: Any, expansions: dict[tuple[str, str], list[str]]) -> list[str]:
    """The index terms a leaf of the query matches."""
    if isinstance(leaf, query.Phrase):
        return [str(w) for w in leaf.words]
    if isinstance(leaf, (query.Prefix, query.Wildcard)):
        return expansions.get((leaf.fieldname, str(leaf.text)), [])
    if isinstance(leaf, query.Term):
        return [str(leaf.text)]
    return []


def _snippet_patterns(q: Any, expansions: dict[tuple[str, str], list[str]]) -> _Patterns:
    wanted = ("text", "title", "headings", "description")
    words: set[str] = set()
    phrases: set[str] = set()
    phrase_terms: set[tuple[str, ...]] = set()
    loose: set[str] = set()
    terms: set[str] = set()
    for leaf in _leaves(q):
        is_phrase = isinstance(leaf, query.Phrase) and leaf.fieldname in wanted and leaf.words
        if is_phrase:
            parts = [str(w) for w in leaf.words]
            phrase_terms.add(tuple(parts))
            if not any(p.isascii() for p in parts):
                phrases.add(re.escape(parts[0] + "".join(p[-1] for p in parts[1:])))
            else:
                gap = r"(?:\W+\w{1,5}){0,2}\W+"  # stop words left out of the phrase
                phrases.add(gap.join(_word_regex(_stem_prefix(p)) + r"\w*" for p in parts))
        if getattr(leaf, "fieldname", None) in wanted:
            for text in _leaf_terms(leaf, expansions):
                words.add(_stem_prefix(text))
                terms.add(text)
                if not is_phrase:
                    loose.add(text)
    ordered = sorted(words, key=len, reverse=True)
    return _Patterns(
        phrase=re.compile("|".join(sorted(phrases)), re.IGNORECASE) if phrases else None,
        words=re.compile("|".join(map(_word_regex, ordered)), re.IGNORECASE) if words else None,
        strict=bool(phrases),
        phrases=tuple(sorted(phrase_terms)),
        loose=frozenset(loose),
        terms=frozenset(terms),
    )


def _windows(text: str, pattern: re.Pattern[str] | None) -> list[tuple[int, int]]:
    windows: list[tuple[int, int]] = []
    if pattern is None:
        return windows
    for match in pattern.finditer(text):
        start = max(match.start() - _SNIPPET_WINDOW, 0)
        end = min(match.end() + _SNIPPET_WINDOW, len(text))
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
        if len(windows) >= 3:
            break
    return windows


def _stored_text(excerpt: Any, patterns: _Patterns) -> str | None:
    """The text the index holds for a snippet, when it is enough: the start of the page's
    text (`store.lead_of`) when it is the whole text or holds the first match with its
    window; None: read the page's WARC record."""
    if not isinstance(excerpt, tuple) or len(excerpt) != 2 or not excerpt[0]:
        return None
    lead = zlib.decompress(excerpt[0]).decode("utf-8", "replace")
    if len(lead) >= excerpt[1]:
        return lead
    pattern = patterns.phrase if patterns.phrase is not None else patterns.words
    found = pattern.search(lead) if pattern is not None else None
    if found is not None and found.end() + _SNIPPET_WINDOW < len(lead):
        return lead
    return None


def _snippet(text: str, fields: Mapping[str, Any], patterns: _Patterns) -> str:
    """Only the windows around the first matches are analyzed and marked: the phrases' when a
    phrase occurs, else the words' (a phrase's words among them)."""
    windows = _windows(text, patterns.phrase)
    if windows:
        pieces = [_widen(text, s, e) for s, e in windows]
        marked = _marked_snippet(pieces, patterns.phrases, patterns.loose)
        if marked:
            return marked
    windows = _windows(text, patterns.words)
    if windows:
        marked = _marked_snippet([_widen(text, s, e) for s, e in windows], (), patterns.terms)
        if marked:
            return marked
    fallback = fields.get("description") or text[:240]
    return escape(fallback[:240])


_FRAGMENT_CHARS = 240
_SURROUND = 70


def _marked_snippet(pieces: list[str], phrases: tuple[tuple[str, ...], ...], terms: frozenset[str]) -> str:
    """The first two pieces of text where a phrase of `phrases` or a term of `terms` occurs,
    marked (the terms of a phrase only where they make it), as the index matched them: the
    text analyzed as indexing analyzes it, a phrase found as its terms at consecutive
    positions.  whoosh's `strict_phrase` highlighting compares the analyzed phrase with the
    text split at spaces, counting the stop words it dropped, and marks whatever words sit
    at the phrase's positions; its highlighter re-analyzes and fragments a page's windows
    for each hit at several times this cost."""
    analyzer = text_analyzer()
    fragments: list[str] = []
    seen: dict[str, int] = {}
    for piece in pieces:
        found = analyzer(piece, positions=True, chars=True)
        tokens = [(t.text, t.pos, t.startchar, t.endchar) for t in found]
        marks = _marks(tokens, phrases, terms)
        if not any(marks):
            continue
        spans = _merged([token[2:] for token, mark in zip(tokens, marks, strict=True) if mark])
        fragments.append(_fragment(piece, spans, seen))
        if len(fragments) == 2:
            break
    return " … ".join(fragments)


def _marks(
    tokens: list[tuple[str, int, int, int]], phrases: tuple[tuple[str, ...], ...], terms: frozenset[str]
) -> list[bool]:
    marks = [token[0] in terms for token in tokens]
    for phrase in phrases:
        size = len(phrase)
        for first in range(len(tokens) - size + 1):
            if tokens[first][0] != phrase[0]:
                continue
            pos = tokens[first][1]
            run = tokens[first : first + size]
            if len(run) == size and all(
                token[0] == word and token[1] == pos + k
                for k, (token, word) in enumerate(zip(run, phrase, strict=True))
            ):
                marks[first : first + size] = [True] * size
    return marks


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching spans as one (a CJK word's bigrams overlap)."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _fragment(text: str, spans: list[tuple[int, int]], seen: dict[str, int]) -> str:
    """The text around the first marks, at most `_FRAGMENT_CHARS` long, escaped and marked as
    whoosh's `HtmlFormatter` marks (a class per distinct word, five at most)."""
    first = spans[0][0]
    kept = [span for span in spans if span[1] - first <= _FRAGMENT_CHARS - 2 * _SURROUND] or spans[:1]
    start = max(first - _SURROUND, 0)
    end = min(max(kept[-1][1] + _SURROUND, start + _FRAGMENT_CHARS // 2), len(text))
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", kept[-1][1], end)
        end = space if space >= 0 else end
    out: list[str] = []
    at = start
    for span_start, span_end in spans:
        if span_end > end:
            break
        word = text[span_start:span_end]
        number = seen.setdefault(word, len(seen) % 5)
        out += (escape(text[at:span_start]), f'<b class="match term{number}">{escape(word)}</b>')
        at = span_end
    out.append(escape(text[at:end]))
    return "".join(out)


def _widen(text: str, start: int, end: int) -> str:
    """Cut at spaces so no word is split (a split word would not be highlighted)."""
    if start > 0:
        space = text.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and start - space < 40 else start
    if end < len(text):
        space = text.find(" ", end)
        end = space if space >= 0 and space - end < 40 else end
    return text[start:end]


SUGGESTION_SCAN = 50_000
"""Words starting with a misspelled word's first letter that are compared with it, at most."""


def suggest(index: Engine, query_text: str) -> str | None:
    """A respelled query when some of its words are in no page ("did you mean")."""
    analyzer = text_analyzer()
    changed = False
    out = query_text

    def present(word: str) -> bool:
        terms = [t.text for t in analyzer(word)]
        return bool(terms) and all(
            any(index.has_term(f, t) for f in ("text", "title", "headings")) for t in terms
        )

    for match in reversed(list(_WORD.finditer(query_text))):
        word = match.group()
        before = query_text[: match.start()]
        if word in _OPERATORS or query_text[match.end() : match.end() + 1] == ":":
            continue
        if before.endswith(("site:", "host:")) or not word.isascii():
            continue
        lowered = word.lower()
        if not list(analyzer(lowered)) or present(lowered):
            continue
        for words in ("spelling", "urlwords"):
            found = _closest(lowered, index.terms_with_prefix(words, lowered[:1], SUGGESTION_SCAN))
            if found is not None and found != lowered:
                out = out[: match.start()] + found + out[match.end() :]
                changed = True
                break
    return out if changed else None


def _closest(word: str, candidates: list[tuple[str, int]], most: int = 2) -> str | None:
    """The word of `candidates` (word, pages) fewest edits from `word` (at most `most`: an
    insertion, a deletion, a substitution or a swap of neighbours), the commonest of equals."""
    best: tuple[int, int, str] | None = None
    for candidate, pages in candidates:
        if abs(len(candidate) - len(word)) > most:
            continue
        distance = _edits(word, candidate, most)
        if distance <= most and (best is None or (distance, -pages) < best[:2]):
            best = (distance, -pages, candidate)
    return best[2] if best is not None else None


def _edits(a: str, b: str, most: int) -> int:
    """The optimal string alignment distance of `a` and `b`, or `most` + 1 once it exceeds `most`."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, char in enumerate(a, start=1):
        previous, row = row, [i] + [0] * len(b)
        for j, other in enumerate(b, start=1):
            cost = 0 if char == other else 1
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], before[j - 2] + 1)
        if min(row) > most:
            return most + 1
        before = previous
    return row[-1]
