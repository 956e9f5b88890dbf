"""The ``[plugins.index]`` table, checked by the core (`archiver.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from archiver.api import setting

MAX_PROCESSES = 256


def _cores() -> int:
    from .parallel import default_processes

    return default_processes()


ENGINES = ("", "tantivy", "whoosh")


def _engine_problem(value: str) -> str | None:
    if value in ENGINES:
        return None
    return "must be tantivy or whoosh (the fallback where tantivy cannot be installed)"


@dataclass(frozen=True)
class IndexSettings:
    batch_size: int = setting(500, low=1, high=1_000_000)
    """Pages per index commit."""
    batch_seconds: float = setting(10.0, low=0.1, high=86_400)
    """Commit at least this often while pages arrive, so a running crawl is searchable."""
    queue_size: int = setting(256, low=1, high=1_000_000)
    """Pages held in memory on their way to the on-disk spool."""
    max_chars: int = setting(200_000, low=1000, high=1_000_000_000)
    """Characters of text indexed per page."""
    crawl_share: float = setting(0.25, low=0.01, high=1)
    """Share of one CPU the index writer uses while the crawl runs."""
    wait: bool = True
    """At the end of a crawl, wait until every page is indexed."""
    processes: int = setting(default_factory=_cores, low=1, high=MAX_PROCESSES)
    """Worker processes that index what is left once the crawl is done (and `reindex`)."""
    engine: str = setting("", check=_engine_problem)
    """The engine of a new index: tantivy, or whoosh (pure Python, slower); by default tantivy
    where it is installed.  An archive's index keeps its engine until `archiver reindex`."""
    max_restarts: ClassVar[int] = 5
    """Writer processes started again after one died, before the crawl gives up indexing."""
