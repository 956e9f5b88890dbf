"""`archiver why ARCHIVE URL...`: which rule of the crawl decides each URL."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click

from ..errors import UsageError
from ..layout import CONFIG_NAME
from ..model import LinkKind
from ..terminal import echo
from . import json_option


@click.command("why")
@click.argument("archive", type=click.Path(path_type=Path))
@click.argument("urls", nargs=-1, required=True)
@json_option()
@click.option(
    "--requisite",
    is_flag=True,
    help="Judge a URL the crawl never met as a page requisite (image, CSS, script), not a followed link.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print nothing: exit 0 when the crawl takes every URL, 1 when it leaves one (as grep -q).",
)
def why_command(archive: Path, urls: tuple[str, ...], as_json: bool, requisite: bool, quiet: bool) -> None:
    """Say for each URL whether the crawl in ARCHIVE takes it, and which rule decided.

    Shows the crawl log's record of the URL (fetched, failed or skipped, with the
    reason), then each rule of the saved configuration applied to it, robots.txt
    included, as the crawl fetched it.
    """
    from ..config import load_config
    from ..robots import agent_token, saved_robots
    from ..status import imported_status
    from ..why import explain, find_in_log, render

    config_path = archive / CONFIG_NAME
    if archive.is_dir() and imported_status(archive) is not None:
        raise UsageError(
            f"{archive} holds WARC files imported by `archiver reindex --warc`: no crawl of its own"
            f" chose their URLs, so no rule decided them (`archiver warc ls {archive}` lists them)"
        )
    if not config_path.is_file():
        raise UsageError(f"{archive} is not an archive (no {CONFIG_NAME})")
    config = load_config(config_path)
    robots = saved_robots(archive, agent_token(config.user_agent)) if config.robots else None
    results = []
    for url in urls:
        logged = find_in_log(archive, url)
        kind = LinkKind.REQUISITE if requisite and logged is None else None
        results.append(explain(url, config, robots, logged=logged, kind=kind))
    if quiet:
        sys.exit(0 if all(result.in_scope for result in results) else 1)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in results], indent=2))
        return
    echo("\n\n".join(render(r) for r in results))
