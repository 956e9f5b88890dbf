"""The index's lines in ``archiver status``: how many pages are searchable, how many wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archiver.api import is_locked

from .spool import pending_in
from .store import (
    MARKER,
    DamagedIndexError,
    MissingIndexError,
    OutdatedIndexError,
    index_root,
    open_engine,
    spool_path,
)


def status_lines(archive: Path) -> list[tuple[str, Any]] | None:
    if not index_root(archive).is_dir():
        return None
    lines: list[tuple[str, Any]] = []
    try:
        index = open_engine(archive)
        try:
            lines.append(("pages searchable", index.pages()))
        finally:
            index.close()
    except DamagedIndexError:
        lines.append(("search index", f"damaged: rebuild it with `archiver reindex {archive}`"))
    except OutdatedIndexError:
        lines.append(
            ("search index", f"made by an earlier version: rebuild it with `archiver reindex {archive}`")
        )
    except MissingIndexError:
        lines.append(("search index", "none yet"))
    pending = pending_in(spool_path(archive))
    if pending:
        lines.append(("pages waiting for the index", pending))
        if not is_locked(archive):  # no crawl feeds the index now: nothing will take them in
            lines.append(("index catch-up", f"run `archiver reindex --pending {archive}`"))
    if (index_root(archive) / MARKER).exists():
        lines.append(("search index", f"incomplete: run `archiver reindex {archive}`"))
    return lines
