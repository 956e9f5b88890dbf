"""`archiver status ARCHIVE`: how far a crawl got and what running it again would do.

Everything is read without disturbing a crawl that may be running: the totals come
from `state.sqlite` (saved with every commit, at most half a second old), whether a
crawl is running from the archive's lock, and plugins add their own lines through
the `archive_status` hook (the index plugin reports how far the index lags).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .archive import CONFIG_NAME
from .crawllog import REPORT_NAME
from .errors import ArchiveError, UsageError
from .lock import LOCK_NAME, Holder, is_locked, read_holder
from .terminal import echo

if TYPE_CHECKING:
    from .frontier import Counts

# The frontiers (and asyncio under them) are imported when a status is read: the command
# line imports this module for `status`, and every command would pay for them at start-up.

NEW, RUNNING, COMPLETE, RESUMABLE, NOT_RESUMABLE = "new", "running", "complete", "resumable", "not resumable"


def _counts() -> Counts:
    from .frontier import Counts

    return Counts()


@dataclass
class ArchiveStatus:
    """What an archive folder says about its crawl."""

    archive: Path
    state: str
    counts: Counts = field(default_factory=_counts)
    frontier: str = "sqlite"
    holder: Holder | None = None
    stale_lock: bool = False
    plugins: list[tuple[str, Any]] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)
    """For a worker of a crawl shared through Redis: the crawl's name, workers, errors."""

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.archive),
            "state": self.state,
            "frontier": self.frontier,
            **asdict(self.counts),
            "pid": self.holder.pid if self.holder and self.state == RUNNING else None,
            "stale_lock": self.stale_lock,
            "plugins": {str(label): value for label, value in self.plugins},
            **({"shared": self.shared} if self.shared else {}),
        }


def _report_complete(archive: Path) -> bool | None:
    try:
        report = json.loads((archive / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return bool(report.get("complete")) if isinstance(report, dict) else None


def archive_status(archive: Path) -> ArchiveStatus:
    """Inspect `archive`; an absent folder is `new`, a folder that is no archive an error."""
    import sqlite3

    from .frontier_sqlite import STATE_NAME, read_counts

    if not archive.exists():
        return ArchiveStatus(archive, NEW)
    if not archive.is_dir():
        raise UsageError(f"{archive} is not a folder")
    running = is_locked(archive)
    holder = read_holder(archive)
    stale = holder is not None and not running
    state_path = archive / STATE_NAME
    if state_path.is_file():
        try:
            counts = read_counts(state_path)
        except sqlite3.OperationalError as exc:
            raise ArchiveError(f"{state_path}: cannot read the crawl state ({exc})") from None
        if running:
            state = RUNNING
        elif counts.seen == 0:
            state = NEW
        elif counts.queued == 0 and counts.in_flight == 0:
            state = COMPLETE
        else:
            state = RESUMABLE
        return ArchiveStatus(archive, state, counts, "sqlite", holder, stale)
    from .distributed import saved_shared_crawl, shared_status

    shared = saved_shared_crawl(archive)
    if shared is not None:
        state = RUNNING if running else NOT_RESUMABLE
        status = ArchiveStatus(archive, state, _counts(), "redis", holder, stale)
        return shared_status(archive, shared, status)
    if running:
        return ArchiveStatus(archive, RUNNING, _counts(), "memory", holder, stale)
    if not (archive / CONFIG_NAME).is_file():
        if any(p.name != LOCK_NAME for p in archive.iterdir()):
            raise UsageError(f"{archive} is not an archive (no {CONFIG_NAME})")
        return ArchiveStatus(archive, NEW)
    # A crawl with the memory frontier leaves no state: only its report can tell.
    state = COMPLETE if _report_complete(archive) else NOT_RESUMABLE
    return ArchiveStatus(archive, state, _counts(), "memory", holder, stale)


def count_rows(counts: Counts, running: bool) -> list[tuple[str, int]]:
    """The frontier's totals as `status` and the web UI's status page both show them."""
    rows = [("done", counts.done), ("queued", counts.queued), ("failed", counts.failed)]
    if running:
        rows.append(("taken from the queue", counts.in_flight))
        rows.append(("being fetched", counts.fetching))
    elif counts.in_flight:
        rows.append(("fetched again on resume", counts.in_flight))
    return rows


def _describe(status: ArchiveStatus) -> str:
    if status.frontier == "redis":
        from .distributed import describe_shared

        lines = describe_shared(status)
        return "\n".join([*lines, *(f"  {label}: {value}" for label, value in status.plugins)])
    c = status.counts
    name = status.archive
    headline = {
        NEW: f"{name}: no crawl yet",
        RUNNING: f"{name}: running ({status.holder.describe() if status.holder else 'another process'})",
        COMPLETE: f"{name}: complete",
        RESUMABLE: f"{name}: resumable: run `archiver crawl --resume {name}` to continue",
        NOT_RESUMABLE: f"{name}: interrupted; its crawl kept no state (memory frontier), so it cannot resume",
    }[status.state]
    lines = [headline]
    if status.frontier == "sqlite" and status.state != NEW:
        lines.append("  " + ", ".join(f"{label} {n}" for label, n in count_rows(c, status.state == RUNNING)))
    if status.stale_lock and status.holder is not None:
        lines.append(f"  stale lock of {status.holder.describe()}: not running, taken over by the next crawl")
    lines.extend(f"  {label}: {value}" for label, value in status.plugins)
    return "\n".join(lines)


@click.command("status")
@click.argument("archive", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the state: new, running, complete, ...")
def status_command(archive: Path, as_json: bool, quiet: bool) -> None:
    """Show how far the crawl in ARCHIVE got: complete, resumable or running, with counts.

    Exit code 0 whatever the state; 2 when ARCHIVE is missing or is not an archive.
    """
    from .archive import require_archive
    from .manager import Hooks, make_plugin_manager

    status = archive_status(require_archive(archive))
    status.plugins = Hooks(make_plugin_manager()).archive_status(archive)
    from .history import read_history
    from .history_lines import history_json, history_lines

    runs = read_history(archive) if archive.is_dir() else []
    if as_json:
        found = {**status.to_json(), "crawls": history_json(runs, status.state == RUNNING)}
        click.echo(json.dumps(found, indent=2, default=str))
    elif quiet:
        click.echo(status.state)
    else:
        echo("\n".join([_describe(status), *history_lines(runs, status.state == RUNNING)]))
