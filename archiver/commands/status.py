"""`archiver status ARCHIVE`: the state of an archive's crawl, in words or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pluggy

from ..layout import CRAWL_FOLDERS
from ..terminal import echo
from . import json_option


@click.command("status")
@click.argument("archive", type=click.Path(path_type=Path))
@json_option()
@click.option("-q", "--quiet", is_flag=True, help="Print only the state: new, running, complete, ...")
@click.pass_obj
def status_command(pm: pluggy.PluginManager | None, archive: Path, as_json: bool, quiet: bool) -> None:
    """Show how far the crawl in ARCHIVE got: complete, resumable or running, with counts.

    Exit code 0 whatever the state; 2 when ARCHIVE is missing or is not an archive.
    """
    from ..archive import require_archive
    from ..history import read_history
    from ..history_lines import history_json, history_lines
    from ..manager import Hooks, make_plugin_manager
    from ..status import RUNNING, archive_status, describe, imported_status, with_queue

    folder = require_archive(archive, also=CRAWL_FOLDERS)
    status = (imported_status(folder) if folder.is_dir() else None) or with_queue(archive_status(folder))
    status.plugins = Hooks(pm or make_plugin_manager()).archive_status(archive, status)
    runs = read_history(archive) if archive.is_dir() else []
    if as_json:
        found = {**status.to_json(), "crawls": history_json(runs, status.state == RUNNING)}
        click.echo(json.dumps(found, indent=2, default=str))
    elif quiet:
        click.echo(status.state)
    else:
        echo("\n".join([describe(status), *history_lines(runs, status.state == RUNNING)]))
