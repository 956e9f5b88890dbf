"""The one interface between the index plugin and the engine that keeps its index.

Everything else in the plugin (the spool, the feeder, the writer and its catch-up,
`reindex`, the index of a merged archive, `search`, the web UI and `status`) talks to an
`Engine` and never to tantivy or whoosh directly.  Documents reach an engine already
analysed (`store.make_document`: each text field a string of index terms separated by
spaces), so both engines index the
same terms at the same positions, and a query parsed by whoosh's query parser (the query
language of docs/search.md, analysed with the same analyzers) matches the same pages in
either.

Two engines: ``tantivy`` (the default: a Rust engine, block-max WAND top-k, background
merges) and ``whoosh`` (stock whoosh, pure Python: the fallback where the tantivy wheel
cannot be installed), chosen by ``[plugins.index] engine``.  Each keeps its files in a
folder of its own under ``ARCHIVE/index/`` (`store`), so the engine of an index is known
from its folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from archiver.api import ArchiveError

TEXT_FIELDS = ("title", "headings", "description", "text")
"""Fields of a document analysed as English text (`schema.text_analyzer`)."""
WORD_FIELDS = ("urlwords", "spelling")
"""Fields of words as written (`schema.plain_analyzer`)."""
WRITER_MEMORY_MB = 48
"""An engine's indexing memory budget: tantivy writes a segment when the documents it
holds reach it (one writer thread, so the budget is that thread's)."""


class DamagedIndexError(ArchiveError):
    """The index files cannot be read (cut short by a crash, a power loss or a full disk)."""


class MissingIndexError(ArchiveError):
    """The archive has no search index (yet)."""


class OutdatedIndexError(MissingIndexError):
    """The archive's index was made by an earlier version, in a format this one cannot read."""


@dataclass(frozen=True, slots=True)
class Found:
    """One matching page as the engine stores it."""

    fields: Mapping[str, Any]
    """url, title, description, time, host, content_type, status, excerpt."""
    score: float


@dataclass(frozen=True, slots=True)
class Ranked:
    """The best `limit` pages of a search, best first, and how many pages match in all."""

    total: int
    found: list[Found]
    timed_out: bool = False


class Restriction(Protocol):
    """Which documents a search may return, whatever their score (`search.Filters`): pages
    on `site` or its subdomains, of `content_type` (a family when it ends in ``/``),
    captured from `time_from` to `time_to` (14 digits, inclusive); '' for any."""

    @property
    def site(self) -> str: ...

    @property
    def content_type(self) -> str: ...

    @property
    def time_from(self) -> str: ...

    @property
    def time_to(self) -> str: ...

    def __bool__(self) -> bool: ...


class Engine(Protocol):
    """An open index: written by one process at a time (`store.WriterLock`), read by many.

    `add` replaces the document of the same URL, whether committed or added earlier in the
    same batch; nothing is visible to readers (other processes included) before `commit`.
    """

    name: str
    folder: Path

    def add(self, document: Mapping[str, Any]) -> None: ...

    def delete(self, url: str) -> None: ...

    def commit(self) -> None:
        """Make what was added searchable, durable, and remove files no commit lists."""

    def cancel(self) -> None:
        """Drop what was added since the last commit."""

    def pages(self) -> int:
        """Searchable documents as last committed."""

    def indexed_times(self) -> dict[str, str]:
        """URL -> capture time of every searchable document."""

    def refresh(self) -> None:
        """See the latest commit (of this or another process)."""

    def search(
        self,
        parsed: Any,
        expansions: Mapping[tuple[str, str], Sequence[str]],
        filters: Restriction | None,
        limit: int,
        deadline: float,
    ) -> Ranked:
        """The best `limit` pages for the whoosh query `parsed`; a prefix or wildcard leaf
        stands for the words `expansions` gives it by (field, text)."""

    def terms_with_prefix(self, field: str, prefix: str, limit: int) -> list[tuple[str, int]]:
        """(term, document frequency) of `field`'s terms that start with `prefix`, in order."""

    def has_term(self, field: str, term: str) -> bool: ...

    def close(self) -> None: ...
