"""`archiver control ARCHIVE VERB [ARGS]`: steer the crawl running in ARCHIVE."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import ArchiveError, UsageError
from ..layout import CONFIG_NAME
from ..terminal import echo
from . import json_option


@click.command("control", context_settings={"ignore_unknown_options": True})
@click.argument("archive", type=click.Path(path_type=Path))
@click.argument("verb")
@click.argument("args", nargs=-1)
@json_option()
def control_command(archive: Path, verb: str, args: tuple[str, ...], as_json: bool) -> None:
    """Steer the crawl running in ARCHIVE; it answers within a second.

    \b
    pause | resume               no new fetch starts (those in flight finish) | go on
    stop                         stop as Ctrl-C does, resumable (exit code 3)
    exclude REGEX                never fetch URLs matching; queued ones are dropped
    include REGEX                fetch only URLs matching an include; others dropped
    delay SECONDS                seconds between two requests to one host
    concurrency N                requests at once to one host
    tasks N                      concurrent workers
    host HOST pause|resume       hold or release one host

    exclude, include, delay, concurrency and tasks are saved in ARCHIVE/crawl.toml: a resume
    keeps them. Every command is written to the crawl log and to ARCHIVE/control.jsonl.
    """
    from ..control import check, send
    from ..status import RUNNING, archive_status

    check(verb, args)
    if not (archive / CONFIG_NAME).is_file():
        raise UsageError(f"{archive} is not an archive (no {CONFIG_NAME})")
    if archive_status(archive).state != RUNNING:
        raise ArchiveError(f"no crawl is running in {archive}: start or resume it with archiver crawl")
    answer = send(archive, verb, args)
    if as_json:
        click.echo(json.dumps({"ok": bool(answer.get("ok")), "message": answer.get("message", "")}))
    elif answer.get("ok"):
        echo(str(answer.get("message", "")))
    if not answer.get("ok"):
        raise UsageError(str(answer.get("message", "refused")))
