"""`archiver status ARCHIVE`: the state of an archive's crawl, in words or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..archive import require_archive
from ..manager import Hooks, make_plugin_manager
from ..status import (
    COMPLETE,
    NEW,
    NOT_RESUMABLE,
    RESUMABLE,
    RUNNING,
    ArchiveStatus,
    archive_status,
    count_rows,
)
from ..terminal import echo
from . import json_option


def _describe(status: ArchiveStatus) -> str:
    if status.headline is not None:
        lines = [status.headline, *status.details]
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
@json_option
@click.option("-q", "--quiet", is_flag=True, help="Print only the state: new, running, complete, ...")
def status_command(archive: Path, as_json: bool, quiet: bool) -> None:
    """Show how far the crawl in ARCHIVE got: complete, resumable or running, with counts.

    Exit code 0 whatever the state; 2 when ARCHIVE is missing or is not an archive.
    """
    status = archive_status(require_archive(archive))
    status.plugins = Hooks(make_plugin_manager()).archive_status(archive, status)
    from ..history import read_history
    from ..history_lines import history_json, history_lines

    runs = read_history(archive) if archive.is_dir() else []
    if as_json:
        found = {**status.to_json(), "crawls": history_json(runs, status.state == RUNNING)}
        click.echo(json.dumps(found, indent=2, default=str))
    elif quiet:
        click.echo(status.state)
    else:
        echo("\n".join([_describe(status), *history_lines(runs, status.state == RUNNING)]))
