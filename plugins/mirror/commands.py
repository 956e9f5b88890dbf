"""`archiver export ARCHIVE DIR`: the command line of the mirror plugin."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archiver.api import json_option
from archiver.terminal import echo, printable

if TYPE_CHECKING:
    from .export import ExportResult

__all__ = ["add_commands"]

# The exporter (and the WARC reader under it) is imported when `export` runs, not when the
# command line is built; its formats are repeated here for the option's choices.
FORMATS = ("dir", "zip", "wacz")
_SUFFIX_FORMATS = {".zip": "zip", ".wacz": "wacz"}


_NOT_WRITTEN = (".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst", ".7z", ".rar")
"""Names of packed files export does not write: given as DIR, they would name a folder."""


def _format_for(output: Path, given: str | None) -> str:
    if given:
        return given
    suffix = output.suffix.lower()
    if suffix in _NOT_WRITTEN and not output.is_dir():
        from archiver.errors import UsageError

        raise UsageError(
            f"{output}: export writes a folder, a .zip or a .wacz file, not a {suffix} file:"
            f" pack the folder it writes yourself (or give --format dir for a folder named {output.name})"
        )
    return _SUFFIX_FORMATS.get(suffix, "dir")


def add_commands(cli: click.Group) -> None:
    @cli.command("export")
    @click.argument("archive", type=click.Path(path_type=Path))
    @click.argument("output", metavar="DIR", type=click.Path(path_type=Path))
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        help="dir (default), zip, or wacz; a DIR ending in .zip/.wacz picks that format.",
    )
    @click.option(
        "--at",
        "timestamp",
        metavar="YYYYMMDDhhmmss",
        help="Export the capture of each URL nearest to this time (default: the latest).",
    )
    @click.option(
        "--mark-missing/--no-mark-missing",
        default=True,
        help="Mark links to pages not in the archive (data-archive-missing + a title). Default on.",
    )
    @json_option("Print the result and the report as JSON.")
    @click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
    def export(
        archive: Path,
        output: Path,
        fmt: str | None,
        timestamp: str | None,
        mark_missing: bool,
        as_json: bool,
        quiet: bool,
    ) -> None:
        """Write the archive ARCHIVE as files a browser opens offline, under DIR.

        Every page, stylesheet, image, script and font is written to DIR/HOST/PATH
        with its links rewritten to relative paths of the exported files; open
        DIR/index.html to start.  Exporting again writes only what changed.
        `--format zip` writes the same tree into one zip file, `--format wacz`
        packs the WARC files, index and page list as a WACZ for ReplayWeb.page/pywb.
        Links that could not be made local are listed in DIR/export-report.json.
        """
        from archiver.archive import require_archive

        from ..warc.suffixes import STORED_NAMES
        from ..warc.wacz_input import is_wacz, unpacked_wacz
        from .export import ExportOptions, export_mirror
        from .plan import check_timestamp

        options = ExportOptions(
            format=_format_for(output, fmt),
            timestamp=check_timestamp(timestamp) if timestamp else None,
            mark_missing=mark_missing,
        )
        with contextlib.ExitStack() as unpacked:
            if is_wacz(archive):  # read from its WARC files, unpacked while the export runs
                archive = unpacked_wacz(archive, unpacked)
            else:
                require_archive(archive, also=("warc",), suffixes=STORED_NAMES)
            result = export_mirror(archive, output, options)
        _print(result, as_json, quiet)
        if result.errors:
            sys.exit(1)  # exported what was readable; the exit code says it is incomplete


def _print(result: ExportResult, as_json: bool, quiet: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return
    for warning in result.warnings:
        echo(f"archiver: warning: {printable(warning)}", err=True)
    for error in result.errors[:10]:
        echo(f"archiver: error: {printable(error)}", err=True)
    if len(result.errors) > 10:
        click.echo(f"archiver: ... and {len(result.errors) - 10} more errors (see the report)", err=True)
    if not quiet:
        echo(result.summary())
    sys.stdout.flush()
