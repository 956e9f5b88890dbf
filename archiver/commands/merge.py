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
@json_option()
def merge_command(sources: tuple[Path, ...], output: Path, copy: bool, as_json: bool) -> None:
    """Combine the archives SOURCES (e.g. one per worker) into one archive OUTPUT.

    Crawl logs and reports are combined; the plugins bring their files over: WARC files
    hard-linked (copied across file systems or with --copy), their CDXJ indexes merged into
    OUTPUT/index.cdxj, the search index joined, so search, serve and export see one
    archive.  Merging again adds only the files not merged yet.
    """
    from ..merge import merge_archives

    result = merge_archives(list(sources), output, copy=copy)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    done = "; ".join(result.summaries) or "nothing to gather"
    click.echo(
        f"Merged {len(result.sources)} archives into {result.archive}: {done} ({result.seconds:.1f} s)."
    )
