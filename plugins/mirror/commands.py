"""`archiver export ARCHIVE DIR`: the command line of the mirror plugin."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archiver.api import WARC_FOLDER, UsageError, echo, json_option, printable

if TYPE_CHECKING:
    from .export import ExportResult

__all__ = ["add_commands"]

# The exporter (and the WARC reader under it) is imported when `export` runs, not when the
# command line is built; its formats are repeated here for the option's choices.
FORMATS = ("dir", "zip", "wacz", "zim", "epub")
_SUFFIX_FORMATS = {".zip": "zip", ".wacz": "wacz", ".zim": "zim", ".epub": "epub"}
_ONLY_FOR = {"main": ("zim",), "title": ("zim", "epub"), "language": ("zim", "epub"), "pages": ("epub",)}


_NOT_WRITTEN = (".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst", ".7z", ".rar")
"""Names of packed files export does not write: given as DIR, they would name a folder."""


def _format_for(output: Path, given: str | None) -> str:
    if given:
        return given
    suffix = output.suffix.lower()
    if suffix in _NOT_WRITTEN and not output.is_dir():
        raise UsageError(
            f"{output}: export writes a folder, a .zip, .wacz, .zim or .epub file, not a {suffix} file:"
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
        help="dir (default), zip, wacz, zim (Kiwix) or epub (e-readers); a DIR ending in"
        " .zip/.wacz/.zim/.epub picks that format.",
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
    @click.option("--main", metavar="URL", help="zim: the page Kiwix opens first (default: the first root).")
    @click.option("--title", help="zim, epub: the title readers show (default: the site's host).")
    @click.option(
        "--language",
        metavar="CODES",
        help="zim, epub: the language of the pages, ISO 639-3 (default: eng).",
    )
    @click.option("--pages", metavar="REGEX", help="epub: only the pages whose URL matches REGEX.")
    @click.option("--under", metavar="URL-PREFIX", help="epub: only the pages whose URL starts so.")
    @json_option("Print the result and the report as JSON.")
    @click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
    def export(
        archive: Path,
        output: Path,
        fmt: str | None,
        timestamp: str | None,
        mark_missing: bool,
        main: str | None,
        title: str | None,
        language: str | None,
        pages: str | None,
        under: str | None,
        as_json: bool,
        quiet: bool,
    ) -> None:
        """Write the archive ARCHIVE as files a browser opens offline, under DIR.

        Every page, stylesheet, image, script and font is written to DIR/HOST/PATH
        with its links rewritten to relative paths of the exported files; open
        DIR/index.html to start.  Exporting again writes only what changed.
        `--format zip` writes the same tree into one zip file, `--format wacz`
        packs the WARC files, index and page list as a WACZ for ReplayWeb.page/pywb.
        `--format zim` writes the same tree into one ZIM file for Kiwix, with its
        search indexes; `--format epub` writes the main text of the pages as the
        chapters of an EPUB 3 book.
        Links that could not be made local are listed in DIR/export-report.json.
        """
        from archiver.api import require_archive

        from ..archive_reader.suffixes import STORED_NAMES
        from ..archive_reader.wacz_input import is_wacz, unpacked_wacz
        from .export import ExportOptions, export_mirror
        from .plan import check_timestamp
        from .progress import progress_bar

        chosen = _format_for(output, fmt)
        given = {"main": main, "title": title, "language": language, "pages": pages or under}
        for name, value in given.items():
            if value is not None and chosen not in _ONLY_FOR[name]:
                option = "--under" if name == "pages" and under else f"--{name}"
                raise UsageError(f"{option} applies to --format {' or '.join(_ONLY_FOR[name])}, not {chosen}")
        options = ExportOptions(
            format=chosen,
            timestamp=check_timestamp(timestamp) if timestamp else None,
            mark_missing=mark_missing,
            main=main,
            title=title,
            language=language or "eng",
            pages=pages,
            under=under,
        )
        with contextlib.ExitStack() as unpacked:
            if is_wacz(archive):  # read from its WARC files, unpacked while the export runs
                archive = unpacked_wacz(archive, unpacked)
            else:
                require_archive(archive, also=(WARC_FOLDER,), suffixes=STORED_NAMES)
            if as_json or quiet or chosen not in ("zim", "epub") or not sys.stderr.isatty():
                result = export_mirror(archive, output, options)
            else:
                with progress_bar(chosen) as progress:
                    result = export_mirror(archive, output, options, progress)
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
