"""The tantivy engine: the index in tantivy's files, queries translated from whoosh's tree.

Documents arrive analysed (`store.make_document`): a text field is its terms separated by
spaces, indexed with tantivy's ``whitespace`` tokenizer, so tantivy holds exactly the terms
and positions our analyzers make (English stemming, stop words, CJK character pairs) and
needs no analyzer of its own registered on every open.  What a result shows is stored in
fields of its own (``shown_title``, ...), the terms are not stored.

A query is parsed by whoosh's parser (`search.parse`) and translated leaf by leaf
(`translate`): a term, a phrase (whoosh's slop 1 is tantivy's 0: adjacent), a prefix or
wildcard (the words `search` expanded it to, bounded there, scored as one constant like
whoosh's), AND / OR / NOT / ANDNOT / ANDMAYBE with their boosts.

tantivy deletes the files of merged segments only when told: every commit is followed by
`garbage_collect_files`, so the folder holds what the last commit lists and no more.  A
folder whose ``meta.json`` is missing, empty or unreadable, or whose listed segment files
are missing or cut short, is damaged (`DamagedIndexError`).  A read-only folder is read
through a folder of links (`_shadow_of`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy
from whoosh import query as wq

from .engine import (
    TEXT_FIELDS,
    WORD_FIELDS,
    WRITER_MEMORY_MB,
    DamagedIndexError,
    Found,
    MissingIndexError,
    Ranked,
    Restriction,
)

WRITER_THREADS = 1
"""Indexing threads: the analysis is done in Python before, tantivy's share is small."""


def make_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("url", stored=True, tokenizer_name="raw", index_option="basic")
    for name in (*TEXT_FIELDS, "urlwords"):
        builder.add_text_field(name, tokenizer_name="whitespace", index_option="position")
    builder.add_text_field("spelling", tokenizer_name="whitespace", index_option="basic")
    builder.add_text_field("site", tokenizer_name="whitespace", index_option="basic")
    builder.add_text_field("content_type", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("time", stored=True, indexed=True, fast=True)
    for name in ("shown_title", "shown_description", "host"):
        builder.add_bytes_field(name, stored=True)
    builder.add_unsigned_field("status", stored=True)
    builder.add_unsigned_field("text_chars", stored=True)
    builder.add_bytes_field("excerpt", stored=True)
    return builder.build()


def _stamp(time: str) -> int:
    return int(time) if time.isdigit() else 0


class TantivyEngine:
    """An index folder opened with tantivy (see the module's docstring)."""

    name = "tantivy"

    def __init__(self, folder: Path, create: bool = False) -> None:
        self.folder = folder
        self._writer: Any = None
        self._shadow: Path | None = None
        if create and not (folder / "meta.json").exists():
            self.schema = make_schema()
            self.index = tantivy.Index(self.schema, path=str(folder), reuse=True)
        else:
            _check(folder)
            opened = folder
            if not os.access(folder, os.W_OK):
                opened = self._shadow = _shadow_of(folder)
            try:
                self.index = tantivy.Index.open(str(opened))
            except (ValueError, OSError) as exc:
                self._remove_shadow()
                raise DamagedIndexError(str(exc)) from exc
            self.schema = self.index.schema
        self.index.config_reader(reload_policy="manual")
        self._searcher: Any = None

    # -- writing -------------------------------------------------------------------------

    def _writer_now(self) -> Any:
        if self._writer is None:
            self._writer = self.index.writer(
                heap_size=WRITER_MEMORY_MB * 1_000_000, num_threads=WRITER_THREADS
            )
        return self._writer

    def add(self, document: Mapping[str, Any]) -> None:
        writer = self._writer_now()
        writer.delete_documents_by_term("url", document["url"])
        doc = tantivy.Document()
        doc.add_text("url", document["url"])
        for name in (*TEXT_FIELDS, *WORD_FIELDS, "site"):
            if document[name]:
                doc.add_text(name, document[name])
        doc.add_text("content_type", document["content_type"])
        doc.add_unsigned("time", _stamp(document["time"]))
        doc.add_bytes("shown_title", document["shown_title"].encode("utf-8", "replace"))
        doc.add_bytes("shown_description", document["shown_description"].encode("utf-8", "replace"))
        doc.add_bytes("host", document["host"].encode("utf-8", "replace"))
        doc.add_unsigned("status", max(int(document["status"]), 0))
        doc.add_unsigned("text_chars", int(document["text_chars"]))
        doc.add_bytes("excerpt", document["excerpt"])
        writer.add_document(doc)

    def delete(self, url: str) -> None:
        self._writer_now().delete_documents_by_term("url", url)

    def commit(self) -> None:
        if self._writer is None:
            return
        self._writer.commit()
        self._writer.garbage_collect_files()

    def cancel(self) -> None:
        if self._writer is not None:
            self._writer.rollback()

    def close(self) -> None:
        """Let the merges that commits started finish (their files are then collected)."""
        writer, self._writer = self._writer, None
        self._searcher = None
        self._remove_shadow()
        if writer is not None:
            writer.wait_merging_threads()
            # the merged segments are listed by now; the files they replace are not
            collector = self.index.writer(heap_size=15_000_000, num_threads=1)
            collector.garbage_collect_files()
            collector.wait_merging_threads()

    def _remove_shadow(self) -> None:
        if self._shadow is not None:
            shutil.rmtree(self._shadow, ignore_errors=True)
            self._shadow = None

    # -- reading -------------------------------------------------------------------------

    def refresh(self) -> None:
        try:
            self.index.reload()
        except ValueError as exc:
            raise DamagedIndexError(str(exc)) from exc
        self._searcher = self.index.searcher()

    @property
    def searcher(self) -> Any:
        if self._searcher is None:
            self.refresh()
        return self._searcher

    def pages(self) -> int:
        return int(self.searcher.num_docs)

    def indexed_times(self) -> dict[str, str]:
        searcher = self.searcher
        found: dict[str, str] = {}
        total = searcher.num_docs
        if not total:
            return found
        result = searcher.search(tantivy.Query.all_query(), limit=total, count=False)
        for _, address in result.hits:
            doc = searcher.doc(address)
            found[doc.get_first("url")] = f"{doc.get_first('time') or 0:014d}"
        return found

    def terms_with_prefix(self, field: str, prefix: str, limit: int) -> list[tuple[str, int]]:
        try:
            found = self.searcher.terms_with_prefix(field, prefix, limit=limit)
        except ValueError:  # a field that holds no words (`time`, `status`)
            return []
        return [(str(t), int(n)) for t, n in found]

    def has_term(self, field: str, term: str) -> bool:
        try:
            return int(self.searcher.doc_freq(field, term)) > 0
        except ValueError:
            return False

    def search(
        self,
        parsed: Any,
        expansions: Mapping[tuple[str, str], Sequence[str]],
        filters: Restriction | None,
        limit: int,
        deadline: float,
    ) -> Ranked:
        searcher = self.searcher
        found = translate(self.schema, parsed, expansions)
        if filters:
            found = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, found),
                    (tantivy.Occur.Must, tantivy.Query.const_score_query(self._filter(filters), 0.0)),
                ]
            )
        result = searcher.search(found, limit=limit, count=True)
        hits = [Found(self._fields(searcher.doc(address)), float(score)) for score, address in result.hits]
        return Ranked(int(result.count), hits)

    def _filter(self, filters: Restriction) -> Any:
        parts: list[Any] = []
        schema = self.schema
        if filters.site:
            parts.append(tantivy.Query.term_query(schema, "site", filters.site))
        if filters.content_type.endswith("/"):
            parts.append(
                tantivy.Query.regex_query(schema, "content_type", _regex_escape(filters.content_type) + ".*")
            )
        elif filters.content_type:
            parts.append(tantivy.Query.term_query(schema, "content_type", filters.content_type))
        if filters.time_from or filters.time_to:
            parts.append(
                tantivy.Query.range_query(
                    schema,
                    "time",
                    tantivy.FieldType.Unsigned,
                    int(filters.time_from or "0"),
                    int(filters.time_to or "99999999999999"),
                )
            )
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, part) for part in parts])

    @staticmethod
    def _fields(doc: Any) -> dict[str, Any]:
        def text(name: str) -> str:
            value = doc.get_first(name)
            return bytes(value).decode("utf-8", "replace") if value is not None else ""

        return {
            "url": doc.get_first("url") or "",
            "title": text("shown_title"),
            "description": text("shown_description"),
            "host": text("host"),
            "content_type": doc.get_first("content_type") or "",
            "time": f"{doc.get_first('time') or 0:014d}",
            "status": int(doc.get_first("status") or 0),
            "excerpt": (bytes(doc.get_first("excerpt") or b""), int(doc.get_first("text_chars") or 0)),
        }


def _shadow_of(folder: Path) -> Path:
    """A folder of links to the index files of the read-only `folder`.

    tantivy opens its lock file ``.tantivy-meta.lock`` for writing to read an index, even
    with no writer anywhere (an archive on read-only media, or another user's: the search
    fails with a permission error); the links let it take the lock in a folder of its own
    and read the files where they are."""
    shadow = Path(tempfile.mkdtemp(prefix="archiver-index-"))
    for path in folder.iterdir():
        if path.is_file() and not path.name.endswith(".lock"):
            (shadow / path.name).symlink_to(path.resolve())
    return shadow


def _regex_escape(text: str) -> str:
    """`text` literally in tantivy's regular expressions (Rust's regex syntax)."""
    return "".join("\\" + ch if ch in r"\.+*?()|[]{}^$#&-~" else ch for ch in text)


def _check(folder: Path) -> None:
    """Refuse a folder tantivy would fail on with a panic or a bare error: no index at all,
    a torn ``meta.json``, or a segment file it lists that is missing or empty."""
    meta = folder / "meta.json"
    if not meta.exists():
        raise MissingIndexError(f"no index in {folder}")
    try:
        listed = json.loads(meta.read_text("utf-8"))
        segments = [str(s["segment_id"]).replace("-", "") for s in listed["segments"]]
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise DamagedIndexError(f"{meta}: {exc}") from exc
    for segment in segments:
        for suffix in (".idx", ".term", ".store"):
            path = folder / (segment + suffix)
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise DamagedIndexError(f"{path}: {exc}") from exc
            if size == 0:
                raise DamagedIndexError(f"{path} is empty")


def translate(schema: Any, q: Any, expansions: Mapping[tuple[str, str], Sequence[str]]) -> Any:
    """The tantivy query for the whoosh query `q` (see the module's docstring)."""
    Q = tantivy.Query
    boost = float(getattr(q, "boost", 1.0) or 1.0)
    built: Any
    if q is wq.NullQuery:
        return Q.empty_query()
    if isinstance(q, wq.Every):
        built = Q.all_query()
    elif isinstance(q, wq.Term):
        built = Q.term_query(schema, q.fieldname, str(q.text))
    elif isinstance(q, wq.Phrase):
        words: list[str | tuple[int, str]] = [str(w) for w in q.words]
        if len(words) == 1:
            built = Q.term_query(schema, q.fieldname, str(words[0]))
        else:
            built = Q.phrase_query(schema, q.fieldname, words, slop=max(int(q.slop) - 1, 0))
    elif isinstance(q, (wq.Prefix, wq.Wildcard)):
        terms = list(expansions.get((q.fieldname, str(q.text)), ()))
        if not terms:
            return Q.empty_query()
        built = Q.const_score_query(Q.term_set_query(schema, q.fieldname, terms), boost)
        return built
    elif isinstance(q, wq.Not):
        built = Q.boolean_query(
            [
                (tantivy.Occur.Must, Q.all_query()),
                (tantivy.Occur.MustNot, translate(schema, q.query, expansions)),
            ]
        )
    elif isinstance(q, wq.AndNot):
        built = Q.boolean_query(
            [
                (tantivy.Occur.Must, translate(schema, q.a, expansions)),
                (tantivy.Occur.MustNot, translate(schema, q.b, expansions)),
            ]
        )
    elif isinstance(q, wq.AndMaybe):
        built = Q.boolean_query(
            [
                (tantivy.Occur.Must, translate(schema, q.a, expansions)),
                (tantivy.Occur.Should, translate(schema, q.b, expansions)),
            ]
        )
    elif isinstance(q, wq.Require):
        built = Q.boolean_query(
            [
                (tantivy.Occur.Must, translate(schema, q.a, expansions)),
                (tantivy.Occur.Must, Q.const_score_query(translate(schema, q.b, expansions), 0.0)),
            ]
        )
    elif isinstance(q, wq.DisjunctionMax):
        built = Q.disjunction_max_query(
            [translate(schema, child, expansions) for child in q.subqueries], tie_breaker=q.tiebreak or None
        )
    elif isinstance(q, (wq.And, wq.Or)):
        occur = tantivy.Occur.Must if isinstance(q, wq.And) else tantivy.Occur.Should
        clauses: list[tuple[Any, Any]] = []
        for child in q.subqueries:
            if isinstance(child, wq.Not) and isinstance(q, wq.And):
                clauses.append((tantivy.Occur.MustNot, translate(schema, child.query, expansions)))
            else:
                clauses.append((occur, translate(schema, child, expansions)))
        if all(kind == tantivy.Occur.MustNot for kind, _ in clauses):
            clauses.append((tantivy.Occur.Must, Q.all_query()))
        built = Q.boolean_query(clauses)
    else:
        raise ValueError(f"no tantivy query for {type(q).__name__}")
    return Q.boost_query(built, boost) if boost != 1.0 else built
