"""``archiver warc check``, ``warc ls`` and ``archiver changes``, added through `register_commands`."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import click

from archiver.api import (
    WARC_FOLDER,
    ArchiveError,
    UsageError,
    echo,
    json_option,
    plural,
    printable,
    require_archive,
    warc_folder,
)

from ..archive_reader.suffixes import READ_NAMES

# The reader and the verifier are imported when a command runs: building the command line
# must not load warcio and the decoders.

_WARC_NAMES = READ_NAMES


def warc_files(paths: Iterable[Path]) -> list[Path]:
    """The WARC files named by `paths`: files as given, folders (or ARCHIVE/warc) listed."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            folder = warc_folder(path)
            found.extend(sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(_WARC_NAMES)))
        else:
            raise UsageError(f"no such file or folder: {path}")
    return found


@click.group("warc")
def warc_group() -> None:
    """Check and list the WARC files of an archive."""


@warc_group.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--truncate",
    is_flag=True,
    help="Cut each damaged file back to its last whole record (after a crash).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print faults only.")
@json_option("One JSON object: each file with its records and faults, and the counts.")
def check(paths: tuple[Path, ...], truncate: bool, quiet: bool, as_json: bool) -> None:
    """Verify WARC files strictly: gzip members, lengths, digests.

    PATHS are archive folders, folders of WARC files, WARC files or WACZ files (their WARC
    files checked as they are in the zip).  Every fault is printed with its file, byte
    offset and record; the exit status is 1 when any fault was found.
    """
    from ..archive_reader.members import ReadLimits
    from ..archive_reader.wacz_input import is_wacz, wacz_members
    from .verify import truncate_to_last_good, verify_file

    with contextlib.ExitStack() as unpacked:
        shown: dict[Path, str] = {}
        """Folder a WACZ's WARC files were copied to -> the WACZ, as the lines name them."""
        files: list[Path] = []
        for given in paths:
            if is_wacz(given):
                if truncate:
                    raise UsageError(f"{given}: --truncate cuts WARC files, not the WARC files inside a WACZ")
                folder, members = wacz_members(given, unpacked)
                shown[folder] = str(given)
                files.extend(members)
            else:
                files.extend(warc_files([given]))
        if not files:
            raise UsageError("no WARC files found in " + ", ".join(str(p) for p in paths))

        def named(text: str) -> str:
            for folder, wacz in shown.items():
                text = text.replace(str(folder), wacz)
            return printable(text)

        faults = 0
        damaged = 0
        checked: list[dict[str, object]] = []
        for path in files:
            limits = ReadLimits.for_archive(path.parent)
            report = verify_file(path, limits)
            faults += len(report.faults)
            if as_json:
                said = [named(str(fault)) for fault in report.faults]
                checked.append(
                    {
                        "path": named(str(path)),
                        "size": path.stat().st_size,
                        "records": report.records,
                        "faults": said,
                    }
                )
            else:
                for fault in report.faults:
                    click.echo(named(str(fault)))
            if report.ok:
                if not (quiet or as_json):
                    click.echo(named(f"ok {path} ({plural(report.records, 'record')})"))
                continue
            damaged += 1
            if truncate and any(f.fatal for f in report.faults):
                if not os.access(path, os.W_OK):
                    raise ArchiveError(f"{path} is read-only: cannot cut it back to its last whole record")
                cut = truncate_to_last_good(path, limits)
                if as_json:
                    checked[-1]["cut_bytes"] = cut
                else:
                    ends = f"now ends at offset {report.good_end}"
                    click.echo(printable(f"cut {cut} bytes from {path} ({ends})"))
    if as_json:
        click.echo(json.dumps({"files": checked, "faults": faults, "damaged_files": damaged}, indent=2))
    if faults:
        raise ArchiveError(f"{plural(faults, 'fault')} in {damaged:,} of {plural(len(files), 'WARC file')}")
    if not (quiet or as_json):
        click.echo(f"{plural(len(files), 'WARC file')} ok")


@warc_group.command("ls")
@click.argument("archive", type=click.Path(path_type=Path))
@json_option("One JSON object per line.")
@click.option("-q", "--quiet", is_flag=True, help="Print the URLs only, one a line.")
def ls(archive: Path, as_json: bool, quiet: bool) -> None:
    """List every capture: time, status, type, size (bytes stored) and URL.

    ARCHIVE is an archive folder, a folder of WARC files, a WARC file or a WACZ file."""
    with contextlib.ExitStack() as unpacked:
        _list(_readable(archive, unpacked), as_json, quiet)


def _readable(archive: Path, unpacked: contextlib.ExitStack) -> Path:
    """`archive` checked, or for a WACZ file an archive of its WARC files (removed with `unpacked`)."""
    from ..archive_reader.wacz_input import is_wacz, unpacked_wacz

    if is_wacz(archive):
        return unpacked_wacz(archive, unpacked)
    return require_archive(archive, also=(WARC_FOLDER,), suffixes=_WARC_NAMES)


def _list(archive: Path, as_json: bool, quiet: bool) -> None:
    from ..archive_reader.reader import open_archive

    warcs = open_archive(archive)
    if not (as_json or quiet) and sys.stdout.isatty():
        click.echo(f"{'TIMESTAMP':<14} {'ST':>3} {'TYPE':<24} {'SIZE':>9} URL")  # ST: HTTP status
    for capture in warcs.iter_captures():
        if as_json:
            fields = {
                "timestamp": capture.timestamp,
                "status": capture.status,
                "mime": capture.mime,
                "length": capture.length,
                "url": capture.url,
                "filename": capture.filename,
                "offset": capture.offset,
            }
            click.echo(json.dumps(fields))
            continue
        if quiet:
            click.echo(printable(capture.url))
            continue
        status = str(capture.status) if capture.status is not None else "-"
        line = f"{capture.timestamp} {status:>3} {capture.mime or '-':<24} {capture.length:>9} {capture.url}"
        click.echo(printable(line))
    for problem in warcs.problems:
        click.echo(f"archiver: warning: {printable(problem)}", err=True)
    if warcs.problems:
        raise ArchiveError(f"{len(warcs.problems)} unreadable index lines or records (named above)")


@click.command("changes")
@click.argument("archive", type=click.Path(path_type=Path))
@click.option(
    "--since",
    metavar="TIME",
    help="Compare the captures since TIME with the newest ones before it: a date (2026-11-01),"
    " a date and time (2026-11-01T08:00, UTC unless a zone is given) or a duration (7d, 12h).",
)
@click.option(
    "--crawl",
    "number",
    type=click.IntRange(min=1),
    metavar="N",
    help="Compare crawl N with the one before it (default: the last crawl).",
)
@click.option(
    "--unchanged",
    "list_unchanged",
    is_flag=True,
    help="List the unchanged URLs too (by default only their count is given).",
)
@json_option("One JSON object: crawls compared, counts, URL lists (the unchanged ones with --unchanged).")
@click.option("-q", "--quiet", is_flag=True, help="Print the crawls compared and the counts, no URL.")
def changes(
    archive: Path, since: str | None, number: int | None, list_unchanged: bool, as_json: bool, quiet: bool
) -> None:
    """Show the URLs added, changed and removed between the last two crawls of ARCHIVE,
    and how many are unchanged.

    Unchanged: the server answered 304 Not Modified, or sent the same payload again.
    Removed: now 404/410, or no longer reached by a crawl that finished.
    """
    from ..archive_reader.changes import parse_since, plan
    from ..archive_reader.changes_report import json_chunks, text_lines

    if since is not None and number is not None:
        raise UsageError("give --since or --crawl, not both")
    moment = parse_since(since) if since is not None else None
    require_archive(archive, also=(WARC_FOLDER,))
    try:
        comparison = plan(archive, moment, number).run()
    except OSError as exc:
        raise ArchiveError(f"cannot read {archive}: {exc.strerror or exc}") from None
    with comparison:
        if as_json:
            for chunk in json_chunks(comparison, unchanged=list_unchanged):
                click.echo(chunk, nl=False)
            click.echo()
        else:
            lines = text_lines(comparison, unchanged=list_unchanged)
            for line in itertools.islice(lines, 2) if quiet else lines:
                echo(line)


def register(cli: click.Group) -> None:
    if "warc" not in cli.commands:
        cli.add_command(warc_group)
    if "changes" not in cli.commands:
        cli.add_command(changes)
