"""The fallback engine: stock whoosh (pure Python), for where the tantivy wheel cannot be installed.

whoosh's own writer, codec, storage and merge policy, through its public API only.  The
documents arrive analysed (`store.make_document`), so every text field is indexed with
whoosh's `SpaceSeparatedTokenizer`: the schema pickled in the index's table of contents
names whoosh's classes only, and the terms and positions are those the tantivy engine
indexes.  Slower to index and to search than tantivy, and larger on disk; `--time-limit`
bounds its searches.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from whoosh import collectors
from whoosh import index as whoosh_index
from whoosh import query as wq
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.searching import TimeLimit

from .engine import (
    TEXT_FIELDS,
    WORD_FIELDS,
    DamagedIndexError,
    Found,
    MissingIndexError,
    Ranked,
    Restriction,
)

INDEX_NAME = "MAIN"
DAMAGE_ERRORS = (TypeError, EOFError, ValueError, struct.error, KeyError, IndexError, zlib.error, OSError)
_STORED = ("shown_title", "shown_description", "host", "status", "excerpt", "text_chars")


def make_schema() -> Schema:
    terms = SpaceSeparatedTokenizer()
    fields: dict[str, Any] = {
        "url": ID(stored=True, unique=True),
        "site": KEYWORD(),
        "content_type": ID(stored=True),
        "time": ID(stored=True),
    }
    for name in (*TEXT_FIELDS, "urlwords"):
        fields[name] = TEXT(analyzer=terms)
    fields["spelling"] = TEXT(analyzer=terms, phrase=False)
    for name in _STORED:
        fields[name] = STORED()
    return Schema(**fields)


def _torn_toc(folder: Path) -> bool:
    """The newest table of contents is empty (a power loss): whoosh would raise TypeError
    deep inside, after opening files it never closes."""
    tocs = sorted(
        folder.glob(f"_{INDEX_NAME}_*.toc"),
        key=lambda p: int(p.stem.rsplit("_", 1)[-1]) if p.stem.rsplit("_", 1)[-1].isdigit() else -1,
    )
    return bool(tocs) and tocs[-1].stat().st_size == 0


class WhooshEngine:
    """An index folder opened with stock whoosh."""

    name = "whoosh"

    def __init__(self, folder: Path, create: bool = False) -> None:
        self.folder = folder
        self._writer: Any = None
        self._searcher: Any = None
        self._batch_urls: set[str] = set()
        exists = whoosh_index.exists_in(str(folder), indexname=INDEX_NAME)
        if create and not exists:
            self.ix = whoosh_index.create_in(str(folder), make_schema(), indexname=INDEX_NAME)
            return
        if not exists:
            raise MissingIndexError(f"no index in {folder}")
        try:
            if _torn_toc(folder):
                raise TypeError("zero-length table of contents")
            self.ix = whoosh_index.open_dir(str(folder), indexname=INDEX_NAME)
            self.ix.doc_count()
        except DAMAGE_ERRORS as exc:
            raise DamagedIndexError(f"{folder}: {exc!r}") from exc

    def add(self, document: Mapping[str, Any]) -> None:
        if document["url"] in self._batch_urls:
            # whoosh's update_document cannot see the documents of its own uncommitted batch
            self.commit()
        self._batch_urls.add(document["url"])
        if self._writer is None:
            self._writer = self.ix.writer(timeout=30.0)
        fields = {name: document[name] for name in (*TEXT_FIELDS, *WORD_FIELDS, *_STORED)}
        fields.update(url=document["url"], site=document["site"], content_type=document["content_type"])
        fields["time"] = document["time"]
        self._writer.update_document(**fields)

    def delete(self, url: str) -> None:
        if self._writer is None:
            self._writer = self.ix.writer(timeout=30.0)
        self._writer.delete_by_term("url", url)

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()  # whoosh removes the files of merged segments itself
            self._writer = None
        self._batch_urls.clear()

    def cancel(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            self._writer = None
        self._batch_urls.clear()

    def close(self) -> None:
        self.cancel()
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        self.ix.close()

    def refresh(self) -> None:
        try:
            if self._searcher is None:
                self._searcher = self.ix.searcher()
            elif not self._searcher.up_to_date():
                self._searcher = self._searcher.refresh()
        except DAMAGE_ERRORS as exc:
            raise DamagedIndexError(f"{self.folder}: {exc!r}") from exc

    @property
    def searcher(self) -> Any:
        if self._searcher is None:
            self.refresh()
        return self._searcher

    def pages(self) -> int:
        return int(self.searcher.doc_count())

    def indexed_times(self) -> dict[str, str]:
        return {
            str(fields["url"]): str(fields.get("time") or "")
            for fields in self.searcher.reader().all_stored_fields()
        }

    def terms_with_prefix(self, field: str, prefix: str, limit: int) -> list[tuple[str, int]]:
        reader = self.searcher.reader()
        if field not in reader.schema:
            return []
        found: list[tuple[str, int]] = []
        for term in reader.expand_prefix(field, prefix):
            text = term.decode("utf-8") if isinstance(term, bytes) else str(term)
            found.append((text, int(reader.doc_frequency(field, text))))
            if len(found) >= limit:
                break
        return found

    def has_term(self, field: str, term: str) -> bool:
        return (field, term) in self.searcher.reader()

    def search(
        self,
        parsed: Any,
        expansions: Mapping[tuple[str, str], Sequence[str]],
        filters: Restriction | None,
        limit: int,
        deadline: float,
    ) -> Ranked:
        import time

        searcher = self.searcher
        if filters:
            # scored 0, so the ranking is the query's: whoosh's own filter collector filters
            # only in a call that a time limit collector around it never makes
            parsed = wq.And([parsed, wq.ConstantScoreQuery(self._filter(filters), 0.0)])
        inner = searcher.collector(limit=limit)
        timed = collectors.TimeLimitCollector(
            inner, timelimit=max(deadline - time.monotonic(), 0.05), use_alarm=False
        )
        timed_out = False
        try:
            searcher.search_with_collector(parsed, timed)
        except TimeLimit:
            timed_out = True
        results = timed.results()
        total = results.scored_length() if timed_out else len(results)
        hits = [Found(_fields(hit.fields()), float(hit.score or 0.0)) for hit in results[:limit]]
        return Ranked(total, hits, timed_out)

    @staticmethod
    def _filter(filters: Restriction) -> Any:
        parts: list[Any] = []
        if filters.site:
            parts.append(wq.Term("site", filters.site))
        if filters.content_type.endswith("/"):
            parts.append(wq.Prefix("content_type", filters.content_type))
        elif filters.content_type:
            parts.append(wq.Term("content_type", filters.content_type))
        if filters.time_from or filters.time_to:
            parts.append(wq.TermRange("time", filters.time_from or None, filters.time_to or None))
        return parts[0] if len(parts) == 1 else wq.And(parts)


def _fields(stored: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "url": stored.get("url") or "",
        "title": stored.get("shown_title") or "",
        "description": stored.get("shown_description") or "",
        "host": stored.get("host") or "",
        "content_type": stored.get("content_type") or "",
        "time": stored.get("time") or "",
        "status": int(stored.get("status") or 0),
        "excerpt": (stored.get("excerpt") or b"", int(stored.get("text_chars") or 0)),
    }
