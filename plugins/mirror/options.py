"""What an export is asked and what it answers, and the checks every format makes first.

Below both writers (`export` for folders and zips, `wacz` for WACZ files), so that
neither imports the other for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path as FsPath
from typing import Any

from archiver.api import ArchiveError, ArchiverError, UsageError, plural, saved_config, size

from ..archive_reader.reader import WarcArchive, open_archive
from .plan import Plan, normalize
from .tail import check_tail
from .targets import MissingLinks

__all__ = [
    "ExportOptions",
    "ExportResult",
    "Progress",
    "check_output",
    "mtime_of",
    "open_warcs",
    "start_pages",
]


@dataclass(frozen=True)
class ExportOptions:
    format: str = "dir"
    timestamp: str | None = None
    """Export the capture nearest to this 14-digit time instead of the latest."""
    mark_missing: bool = True
    main: str | None = None
    """ZIM: the URL of the page a reader opens first (default: the crawl's first root)."""
    title: str | None = None
    """ZIM and EPUB: the title readers show (default: the site's host)."""
    language: str = "eng"
    """ZIM and EPUB: the content's language, an ISO 639-3 code."""
    pages: str | None = None
    """EPUB: only pages whose URL matches this regular expression."""
    under: str | None = None
    """EPUB: only pages whose URL starts with this prefix."""


Progress = Callable[[int, int], None]
"""Told (files done, files in all) as an export goes, for a display on a terminal."""


@dataclass
class ExportResult:
    archive: FsPath
    output: FsPath
    format: str
    files: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    rendered: int = 0
    """Pages written as the browser capture rendered them (their ``urn:dom:`` record)."""
    bytes: int = 0
    seconds: float = 0.0
    missing: MissingLinks | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    report_path: str | None = None

    def summary(self) -> str:
        if self.format == "epub":
            errors = f" {plural(len(self.errors), 'error')}." if self.errors else ""
            return (
                f"Wrote {plural(self.files, 'page')} as chapters into {self.output} ({size(self.bytes)})"
                f" in {self.seconds:.1f} s.{errors}"
            )
        if self.format in ("wacz", "zim"):
            errors = f" {plural(len(self.errors), 'error')}." if self.errors else ""
            return (
                f"Packed {plural(self.files, 'file')} into {self.output} ({size(self.bytes)})"
                f" in {self.seconds:.1f} s.{errors}"
            )
        line = (
            f"Exported {plural(self.files, 'file')} ({size(self.bytes)}) to {self.output}"
            f" in {self.seconds:.1f} s: {self.written} written, {self.unchanged} unchanged,"
            f" {self.removed} removed."
        )
        if self.rendered:
            line += f" {plural(self.rendered, 'page')} as rendered by the browser (--browser crawl)."
        if self.missing is not None and self.missing.targets:
            line += (
                f" {plural(self.missing.link_count, 'link')} to {plural(len(self.missing.targets), 'URL')}"
                f" not in the archive {'stays' if self.missing.link_count == 1 else 'stay'} on the web"
            )
            line += f" (see {self.report_path})." if self.report_path else "."
        if self.errors:
            line += f" {plural(len(self.errors), 'error')}."
        return line

    def to_json(self) -> dict[str, Any]:
        missing = self.missing
        return {
            "archive": str(self.archive),
            "output": str(self.output),
            "format": self.format,
            "files": self.files,
            "written": self.written,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "rendered": self.rendered,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "missing_links": missing.link_count if missing else 0,
            "missing_urls": len(missing.targets) if missing else 0,
            "missing_by_reason": dict(missing.by_reason()) if missing else {},
            "errors": self.errors,
            "warnings": self.warnings,
            "missing": missing.to_json() if missing else [],
        }


def open_warcs(archive: FsPath) -> tuple[WarcArchive, list[str]]:
    """The archive's WARC files for reading, and warnings about damaged tails."""
    if not archive.exists():
        raise UsageError(f"no archive at {archive}")
    warcs = open_archive(archive)
    files = warcs.warc_files() if warcs.folder.is_dir() else []
    if not files:
        raise ArchiveError(f"{archive} holds no WARC files (looked in {warcs.folder}): nothing to export")
    warnings: list[str] = []
    by_file: dict[str, list[Any]] = {}
    for capture in warcs.iter_captures():
        by_file.setdefault(capture.filename, []).append(capture)
    for path in files:
        try:
            tail = check_tail(path, by_file.get(path.name, []))
        except OSError as exc:
            warnings.append(f"{path.name}: cannot be read: {exc.strerror or exc}")
            continue
        if tail.damaged:
            warnings.append(
                f"{path.name} has a damaged tail ({tail.problem}); the records before it are exported"
            )
    return warcs, warnings


def mtime_of(timestamp: str) -> float | None:
    try:
        return datetime.strptime(timestamp[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def check_output(output: FsPath, fmt: str) -> None:
    if fmt == "dir":
        if output.exists() and not output.is_dir():
            raise UsageError(f"{output} is a file; give a folder to export into (or --format zip)")
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot create {output}: {exc.strerror or exc}") from None
        if not os.access(output, os.W_OK | os.X_OK):
            raise ArchiveError(f"cannot write to {output}: permission denied")
        return
    if output.is_dir():
        raise UsageError(f"{output} is a folder; --format {fmt} writes one file (e.g. {output.name}.{fmt})")
    parent = output.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArchiveError(f"cannot create {parent}: {exc.strerror or exc}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArchiveError(f"cannot write to {parent}: permission denied")


def start_pages(archive: FsPath, plan: Plan) -> list[str]:
    roots: list[str] = []
    try:
        crawl = saved_config(archive).get("crawl", {})
        roots = [str(r) for r in crawl.get("roots", [])]
    except (ArchiverError, OSError, ValueError):
        pass
    found = [normalize(root) for root in roots]
    return [url for url in found if url is not None]
