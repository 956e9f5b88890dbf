"""`archiver search` and `archiver reindex`."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from archiver.api import ArchiveError, UsageError, echo, json_option, plural, printable, require_archive

if TYPE_CHECKING:
    from .search import SearchResults

# whoosh is imported when a command runs, not when the command line is built (every
# command would pay for it at start-up); so these defaults repeat search.DEFAULT_TIME_LIMIT
# and store.DEFAULT_MAX_CHARS (tests/test_startup.py checks that they agree).
DEFAULT_TIME_LIMIT = 5.0
DEFAULT_MAX_CHARS = 200_000

_MATCH = re.compile(r'<b class="match[^"]*">(.*?)</b>', re.S)
_TAG = re.compile(r"<[^>]+>")


def _archive(path: Path) -> Path:
    return require_archive(path, also=("index", "warc"))


def _text_from_terminal(words: tuple[str, ...]) -> str:
    text = " ".join(words)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            "the query holds bytes that are not text in this terminal's encoding "
            f"({sys.getfilesystemencoding()}); set a UTF-8 locale (LANG=C.UTF-8) and retry"
        ) from None
    return text


def _tolerant_output() -> None:
    """Print what the terminal can show and replace the rest, instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def _snippet_for_terminal(snippet: str) -> str:
    parts = _MATCH.split(snippet)  # text, marked, text, marked, ...
    shown = [printable(html.unescape(_TAG.sub("", part))) for part in parts]
    return "".join(
        click.style(text, bold=True, fg="yellow") if index % 2 else text for index, text in enumerate(shown)
    )


def _when(stamp: str) -> str:
    if len(stamp) != 14:
        return stamp
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[8:10]}:{stamp[10:12]}:{stamp[12:]} UTC"


def _print(results: SearchResults, archive: Path) -> None:
    for note in results.notes:
        echo(f"note: {note}", err=True)
    if results.pending:
        click.echo(f"note: {results.pending:,} fetched pages are not indexed yet", err=True)
    if results.timed_out:
        click.echo(
            "note: the search hit its time limit; these are the best matches found by then "
            "(raise --time-limit or make the query more specific)",
            err=True,
        )
    if not results.hits:
        message = f"no pages match {results.query!r}"
        if results.total and results.page > results.pages:
            message = f"page {results.page} is past the last page ({results.pages})"
        echo(message + ".")
        if results.suggestion:
            echo(f"did you mean: {results.suggestion}")
        return
    first = results.hits[0].rank
    last = results.hits[-1].rank
    echo(
        f"{results.total:,} {'page matches' if results.total == 1 else 'pages match'}"
        f" {results.query!r}; showing {first}-{last}"
        f" (page {results.page} of {results.pages}, {results.elapsed:.2f} s)\n"
    )
    width = len(str(last))
    indent = " " * (width + 2)
    for hit in results.hits:
        title = printable(hit.title or hit.url)
        click.echo(f"{hit.rank:>{width}}. " + click.style(title, bold=True))
        click.echo(f"{indent}{click.style(printable(hit.url), fg='cyan')}  {printable(_when(hit.time))}")
        if hit.snippet:
            click.echo(f"{indent}{_snippet_for_terminal(hit.snippet)}")
        click.echo("")


@click.command("search")
@click.argument("archive", type=click.Path(path_type=Path))
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 1000), help="Results per page."
)
@click.option(
    "--page", "-p", default=1, show_default=True, type=click.IntRange(1), help="Which page of results."
)
@json_option("Print the results as one JSON object.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the URLs of the hits, one per line.")
@click.option("--no-snippets", is_flag=True, help="Leave out the highlighted text (faster).")
@click.option(
    "--time-limit",
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Stop searching after this many seconds.",
)
@click.option("--site", default="", help="Only pages on this host (and its subdomains).")
@click.option(
    "--type", "content_type", default="", help="Only this content type (text/html), or family (text/)."
)
@click.option(
    "--from",
    "time_from",
    default="",
    help="Only pages captured at or after this UTC time (YYYY[MM[DD[hh[mm[ss]]]]]).",
)
@click.option(
    "--to",
    "time_to",
    default="",
    help="Only pages captured at or before this UTC time (same form, inclusive).",
)
def search_command(
    archive: Path,
    query: tuple[str, ...],
    limit: int,
    page: int,
    as_json: bool,
    quiet: bool,
    no_snippets: bool,
    time_limit: float,
    site: str,
    content_type: str,
    time_from: str,
    time_to: str,
) -> None:
    """Search the pages archived in ARCHIVE.

    QUERY: words (all must match), "a phrase", OR, NOT or -word, title:word,
    url:word, site:HOST, prefix* .  With a filter (--site, --type, --from, --to),
    QUERY may be '' to list every page that passes it.
    """
    from .search import search

    _tolerant_output()
    text = _text_from_terminal(query)
    results = search(
        _archive(archive),
        text,
        limit=limit,
        page=page,
        with_snippets=not (no_snippets or quiet),
        time_limit=time_limit,
        site=site,
        content_type=content_type,
        time_from=time_from,
        time_to=time_to,
    )
    if as_json:
        ascii_only = (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") != "utf8"
        click.echo(json.dumps(dataclasses.asdict(results), ensure_ascii=ascii_only, indent=1))
        return
    if quiet:
        for hit in results.hits:
            click.echo(hit.url)
        return
    _print(results, archive)


@click.command("reindex")
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--warc",
    "warc_files",
    is_flag=True,
    help="SOURCES are WARC files (from any tool), indexed into -o ARCHIVE.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="With --warc: the archive folder that gets the index (created if needed).",
)
@click.option(
    "--link",
    type=click.Choice(["copy", "hard", "symlink"]),
    default="copy",
    show_default=True,
    help="With --warc: how ARCHIVE/warc/ gets the WARC files (copies, hard links or symlinks).",
)
@click.option("--pending", is_flag=True, help="Only index the pages an interrupted crawl left waiting.")
@click.option(
    "--processes",
    type=click.IntRange(1, 256),
    help="Worker processes that index in parallel (default: the machine's cores).",
)
@click.option(
    "--batch-size", default=2000, show_default=True, type=click.IntRange(1), help="Pages per commit."
)
@click.option(
    "--max-chars",
    default=DEFAULT_MAX_CHARS,
    show_default=True,
    type=click.IntRange(1000),
    help="Characters of text indexed per page.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@json_option("One JSON object: pages indexed, WARC files read, seconds, what could not be read.")
def reindex_command(
    sources: tuple[Path, ...],
    warc_files: bool,
    output: Path | None,
    link: Literal["copy", "hard", "symlink"],
    pending: bool,
    processes: int | None,
    batch_size: int,
    max_chars: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Rebuild the search index of ARCHIVE from its WARC files.

    \b
    archiver reindex ARCHIVE                     rebuild from ARCHIVE/warc/
    archiver reindex --warc FILE... -o ARCHIVE   index WARC files made by other tools
    archiver reindex --pending ARCHIVE           catch up after an interrupted crawl
    """
    from .parallel import default_processes
    from .reindex import ReindexStats, catch_up, reindex

    workers = processes or default_processes()

    def progress(stats: ReindexStats) -> None:
        if quiet or as_json:
            return
        rate = stats.indexed / stats.seconds if stats.seconds else 0.0
        pages, files = plural(stats.indexed, "page"), plural(stats.files, "file")
        click.echo(f"indexed {pages} from {files} ({rate:.0f}/s)", err=True)

    if warc_files:
        if output is None:
            raise UsageError("--warc needs -o ARCHIVE: the folder that will hold the index")
        if not sources:
            raise UsageError("--warc needs at least one WARC file")
        if output.exists() and not output.is_dir():
            raise UsageError(f"{output} is a file; give a folder for the archive")
        from ..archive_reader.importing import import_warcs

        output.mkdir(parents=True, exist_ok=True)
        import_warcs(list(sources), output, link)  # serve, export and warc check read them there
        stats = reindex(
            output, None, batch_size, max_chars, progress, workers
        )  # all the archive's WARC files
        archive = output
    else:
        if output is not None:
            raise UsageError("-o is for --warc; to rebuild an archive's index give just ARCHIVE")
        if len(sources) != 1:
            raise UsageError("give one archive folder (or --warc FILE... -o ARCHIVE)")
        archive = _archive(sources[0])
        if pending:
            waiting = catch_up(archive, batch_size, max_chars, workers)
            if as_json:
                click.echo(json.dumps({"archive": str(archive), "indexed": waiting}, indent=2))
            elif not quiet:
                click.echo(f"indexed {plural(waiting, 'waiting page')} of {archive}")
            return
        stats = reindex(archive, None, batch_size, max_chars, progress, workers)
    skipped = f"; {plural(stats.skipped_files, 'damaged file')} read in part" if stats.skipped_files else ""
    if stats.skipped_records:
        skipped += f"; {plural(stats.skipped_records, 'unreadable record')} skipped"
    if as_json:
        summary = {
            "archive": str(archive),
            "indexed": stats.indexed,
            "warc_files": stats.files,
            "seconds": round(stats.seconds, 3),
            "damaged_files": stats.skipped_files,
            "unreadable_records": stats.skipped_records,
        }
        click.echo(json.dumps(summary, indent=2))
    elif not quiet:
        click.echo(
            f"indexed {plural(stats.indexed, 'page')} from {plural(stats.files, 'WARC file')} into {archive}"
            f" in {stats.seconds:.1f} s{skipped}"
        )
    if stats.skipped_files or stats.skipped_records:
        raise ArchiveError("some WARC records could not be read (each is named above)")
