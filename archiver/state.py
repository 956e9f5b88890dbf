"""`state.sqlite`, where the default frontier keeps a crawl: its name, its connection, its totals.

Apart from the frontier itself (frontier_sqlite.py), so that `archiver status` reads the
totals without importing the event loop.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .errors import ArchiveError
from .model import Counts


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


def read_host_counts(path: Path) -> dict[str, int]:
    """What the hosts were doing at the last commit of a running crawl (`schedule.HostCounts`'s
    fields), or nothing when the file holds none (a crawl of an older version, or not running)."""
    db = connect(path, readonly=True)
    try:
        rows = db.execute("SELECT name, value FROM meta WHERE name LIKE 'hosts_%'").fetchall()
    except sqlite3.DatabaseError:
        return {}
    finally:
        db.close()
    return {name.removeprefix("hosts_"): int(value) for name, value in rows}


def describe_hosts(hosts: dict[str, int]) -> str:
    """``3 fetching, 180 waiting on politeness, 1 paused (...)``: the progress display's and
    `archiver status`'s words for `schedule.HostCounts`."""
    text = f"{hosts.get('fetching', 0):,} fetching, {hosts.get('waiting', 0):,} waiting on politeness"
    if hosts.get("paused"):
        text += f", {hosts['paused']:,} paused (Retry-After, robots.txt unavailable or archiver control)"
    return text
