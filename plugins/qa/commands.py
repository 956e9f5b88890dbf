"""``archiver qa ARCHIVE``: replay archived pages in headless Chromium and report what they lack."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from archiver.api import (
    QA_FOLDER,
    WARC_FOLDER,
    UsageError,
    echo,
    json_option,
    plural,
    require_archive,
    setup_logging,
)

if TYPE_CHECKING:
    from .records import PageResult
    from .results import Summary

WORST_SHOWN = 10


def add_commands(cli: click.Group) -> None:
    @cli.command("qa")
    @click.argument("archive", type=click.Path(path_type=Path))
    @click.option("--sample", type=click.IntRange(min=1), help="Check N pages chosen at random.")
    @click.option("--pages", "pattern", metavar="REGEX", help="Check only the pages whose URL matches.")
    @click.option(
        "--tabs", type=click.IntRange(1, 32), default=2, show_default=True, help="Pages replayed at once."
    )
    @click.option(
        "--patch",
        is_flag=True,
        help="Then fetch what the pages lack (a crawl of mode patch, with the archive's settings) "
        "and check those pages again.",
    )
    @click.option(
        "--export",
        "export",
        type=click.Path(path_type=Path),
        metavar="DIR",
        help="Check the folder `archiver export ARCHIVE DIR` wrote instead, its pages opened from disk.",
    )
    @click.option(
        "--page-timeout",
        type=click.FloatRange(1, 3600),
        default=30.0,
        show_default=True,
        help="Seconds one page may take to replay.",
    )
    @json_option()
    @click.option("-q", "--quiet", is_flag=True, help="Print only the summary line; no progress bar.")
    @click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
    def qa(
        archive: Path,
        sample: int | None,
        pattern: str | None,
        tabs: int,
        patch: bool,
        export: Path | None,
        page_timeout: float,
        as_json: bool,
        quiet: bool,
        verbose: int,
    ) -> None:
        """Replay the pages of ARCHIVE in headless Chromium and report what each lacks.

        For each page: every request it made and whether the archive answered it (what is
        missing, and whether the HTML, a stylesheet or a script asked for it), its console
        errors and, for pages captured with --browser, how closely its screenshot and
        visible text match the capture.  Nothing reaches the live web.  Results are kept in
        ARCHIVE/qa/ (`archiver serve` shows them at /qa).  Exit code 1 when a page lacks
        something, 0 when every page is complete.
        """
        setup_logging(verbose, quiet or as_json)
        require_archive(archive, also=(WARC_FOLDER,))
        if not (archive / WARC_FOLDER).is_dir():
            raise UsageError(f"{archive} holds no WARC files: nothing to check")
        try:
            compiled = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise click.BadParameter(f"{pattern!r}: {exc}", param_hint="--pages") from None
        if export is not None and patch:
            raise UsageError("--patch fetches into the archive; QA of an export (--export) cannot patch it")
        if export is not None and not export.is_dir():
            raise UsageError(f"--export {export}: no such folder (zip and WACZ exports are not checked)")
        from .run import Selection
        from .session import ChecksInterrupted, PatchInterrupted, run_qa

        try:
            outcome = run_qa(
                archive,
                Selection(pattern=compiled, sample=sample or 0),
                tabs=tabs,
                page_timeout=page_timeout,
                bar=not (quiet or as_json) and sys.stderr.isatty(),
                patch=patch,
                export=export,
            )
        except ChecksInterrupted as stop:
            if not as_json and not quiet:
                click.echo(
                    f"Interrupted: {stop.checked} of {stop.total} pages checked, {stop.lacking} lacking"
                    " something; run the same command again to check them all.",
                    err=True,
                )
            sys.exit(130)
        except PatchInterrupted as stop:
            click.echo(
                f"Interrupted: run `archiver qa --patch {archive}` again to finish the patch.", err=True
            )
            sys.exit(128 + stop.signum)
        summary = outcome.summary
        if as_json:
            data: dict[str, Any] = {"archive": str(archive), "run": outcome.run, **summary.to_json()}
            if export is not None:
                data["export"] = str(export)
            if outcome.patch is not None:
                data["patch"] = outcome.patch
            click.echo(json.dumps(data, indent=2))
        elif quiet:
            echo(headline(archive, outcome.run, summary, export))
        else:
            if outcome.before is not None:
                echo(report(archive, *outcome.before, footer=False))
            if outcome.patch_words:
                echo(outcome.patch_words)
            echo(report(archive, outcome.run, summary, export=export))
        if summary.complete < summary.checked:
            sys.exit(1)


def headline(archive: Path, run: int, summary: Summary, export: Path | None = None) -> str:
    counts = (
        f"{plural(summary.checked, 'page')} checked, {summary.complete:,} complete, "
        f"{plural(len(summary.missing_urls), 'resource')} missing"
    )
    if export is not None:
        held = len(summary.held_by_archive)
        return f"QA of the export {export} (of {archive}): {counts}; the archive holds {held} it lacks."
    return f"QA run {run} of {archive}: {counts}."


def report(archive: Path, run: int, summary: Summary, footer: bool = True, export: Path | None = None) -> str:
    lines = [headline(archive, run, summary, export)]
    if summary.held_by_archive:
        where = "the export lacks" if export is not None else "the replay did not reach"
        lines.append(f"Held by the archive, {where}:")
        lines.extend(f"  {url} ({by} asked)" for url, by in list(summary.held_by_archive.items())[:20])
    if summary.missing_by_kind:
        lines.append("Missing, by who asked: " + _counts(summary.missing_by_kind) + ".")
        lines.append("Missing, by host: " + _counts(summary.missing_by_host) + ".")
    if summary.gone_urls:
        lines.append(f"Archived as errors (404, ...), gone from the site: {len(summary.gone_urls)}.")
    if summary.live_requests:
        lines.append(f"Requests for the live web blocked: {summary.live_requests}.")
    if summary.worst:
        lines.append("Worst pages:")
        for page in summary.worst[:WORST_SHOWN]:
            lines.append(f"  {page.url}{_scores(page)}")
            lines.extend(f"    missing ({r.by} asked): {r.url}" for r in page.missing[:10])
            lines.extend(f"    blocked, live web ({r.by} asked): {r.url}" for r in page.live[:5])
            lines.extend(f"    outside the replay ({r.by} asked): {r.url}" for r in page.outside[:5])
            lines.extend(f"    note: {note}" for note in page.notes[:3])
    if footer and export is None:
        lines.append(f"Results: {archive / QA_FOLDER}; `archiver serve {archive}` shows them at /qa.")
    return "\n".join(lines)


def _counts(counter: Any) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


def _scores(page: PageResult) -> str:
    parts = []
    if page.screenshot_score is not None:
        parts.append(f"screenshot {page.screenshot_score:.2f}")
    if page.text_score is not None:
        parts.append(f"text {page.text_score:.2f}")
    return f"  ({', '.join(parts)})" if parts else ""
