"""`archiver merge SOURCES -o OUTPUT`: the archives of a crawl's workers made one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from . import json_option


@click.command("merge")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path), help="The merged archive.")
@click.option("--copy", is_flag=True, help="Copy WARC files instead of hard-linking them.")
@json_option
def merge_command(sources: tuple[Path, ...], output: Path, copy: bool, as_json: bool) -> None:
    """Combine the archives SOURCES (e.g. one per worker) into one archive OUTPUT.

    WARC files are hard-linked (copied across file systems or with --copy), their CDXJ
    indexes merged into OUTPUT/index.cdxj, crawl logs and reports combined, and the search
    index rebuilt, so search, serve and export see one archive.  Merging again adds only
    the files not merged yet.
    """
    from ..distributed import merge_archives

    result = merge_archives(list(sources), output, copy=copy)
    if as_json:
        data = {k: v for k, v in vars(result).items() if k != "names"}
        click.echo(json.dumps(data, indent=2, default=str))
        return
    click.echo(
        f"Merged {len(result.sources)} archives into {result.archive}: {result.linked} WARC files linked,"
        f" {result.copied} copied, {result.already} already there; {result.captures} captures"
        f" in index.cdxj ({result.seconds:.1f} s)."
    )
