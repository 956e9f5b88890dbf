"""`state.sqlite`, where the default frontier keeps a crawl: its name, its connection, its totals.

Apart from the frontier itself (frontier_sqlite.py), so that `archiver status` reads the
totals without importing the event loop.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import ArchiveError
from .model import Counts

STATE_NAME = "state.sqlite"


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection with the settings every user of `state.sqlite` needs."""
    if readonly:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    else:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


def read_counts(path: Path) -> Counts:
    """Totals saved in `path` by the last commit, read without disturbing a running crawl."""
    db = connect(path, readonly=True)
    try:
        rows = dict(db.execute("SELECT name, value FROM meta WHERE name LIKE 'count_%'").fetchall())
    except sqlite3.DatabaseError as exc:
        raise ArchiveError(f"{path}: not a crawl state database ({exc})") from None
    finally:
        db.close()
    queued, in_flight = int(rows.get("count_queued", 0)), int(rows.get("count_in_flight", 0))
    done, failed = int(rows.get("count_done", 0)), int(rows.get("count_failed", 0))
    fetching = int(rows.get("count_fetching", 0))
    return Counts(queued, in_flight, done, failed, queued + in_flight + done + failed, fetching)


def read_queued(path: Path, limit: int) -> list[str]:
    """The URLs at the head of the queue (those leased by a running crawl first), at most `limit`,
    read without disturbing a running crawl."""
    db = connect(path, readonly=True)
    try:
        rows = db.execute(
            "SELECT coalesce(url, key) FROM urls WHERE state IN (0, 1) ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise ArchiveError(f"{path}: not a crawl state database ({exc})") from None
    finally:
        db.close()
    return [row[0] for row in rows]
