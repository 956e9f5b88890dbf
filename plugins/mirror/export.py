"""`export_mirror`: an archive -> a folder (or zip) of files a browser opens offline.

The steps: check the archive and the output, build the plan (a capture and a file per
URL), write each file (pages and stylesheets rewritten, redirects as forwarding pages,
everything else as stored), then the landing page, the report of links left pointing
at the web, and the manifest that makes the next export incremental.  A record that
cannot be read is reported and skipped: everything readable is still exported.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path as FsPath
from typing import Any

from archiver import __version__
from archiver.api import plural, size
from archiver.archive import saved_config
from archiver.errors import ArchiveError, ArchiverError, UsageError

from ..warc.reader import WarcArchive, open_archive
from .landing import SiteEntry, landing_page
from .names import MirrorPath, relative_href
from .plan import Item, Plan, build_plan, normalize, roots_of
from .render import HTML_TYPES, redirect_page, render, render_snapshot
from .rendered import rendered_dom
from .safedir import Blocked
from .sinks import MANIFEST_NAME, DirSink, Sink, ZipSink
from .tail import check_tail
from .targets import FileLinks, MissingLinks, crawl_log_reasons

__all__ = ["ExportOptions", "ExportResult", "export_mirror", "open_warcs"]

log = logging.getLogger(__name__)

REPORT_NAME = "export-report.json"
LANDING_NAME = "index.html"
FORMATS = ("dir", "zip", "wacz")


@dataclass(frozen=True)
class ExportOptions:
    format: str = "dir"
    timestamp: str | None = None
    """Export the capture nearest to this 14-digit time instead of the latest."""
    mark_missing: bool = True


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
        if self.format == "wacz":
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


def plan_hash(plan: Plan, options: ExportOptions) -> str:
    digest = hashlib.sha256(f"{__version__}\n{options.mark_missing}\n{options.timestamp}\n".encode())
    for url in sorted(plan.items):
        item = plan.items[url]
        digest.update(f"{url}\t{'/'.join(plan.paths[url])}\t{item.location or ''}\n".encode())
    return digest.hexdigest()


def _source(item: Item) -> str:
    capture = item.capture
    return f"{capture.filename}:{capture.offset}:{capture.digest or ''}"


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


def _sites(plan: Plan, starts: list[str]) -> list[SiteEntry]:
    counts: Counter[str] = Counter(plan.paths[url][0] for url in plan.items)
    start_of: dict[str, tuple[str, MirrorPath]] = {}
    for url in [*starts, *roots_of(plan.items.values())]:
        item = plan.final(url)
        if item is None:
            continue
        folder = plan.paths[item.url][0]
        start_of.setdefault(folder, (url, plan.paths[item.url]))
    sites = []
    for folder in sorted(counts, key=lambda f: (f not in start_of, f)):
        url, path = start_of.get(folder, (None, None))  # type: ignore[assignment]
        href = relative_href((LANDING_NAME,), path) if path is not None else None
        sites.append(SiteEntry(folder, counts[folder], href, url))
    return sites


def export_mirror(archive: FsPath, output: FsPath, options: ExportOptions = ExportOptions()) -> ExportResult:
    """Export `archive` to `output` as a browsable folder or zip (`options.format`)."""
    if options.format == "wacz":
        from .wacz import export_wacz

        wacz_result: ExportResult = export_wacz(archive, output, options)
        return wacz_result
    if options.format not in FORMATS:
        raise UsageError(f"unknown format {options.format!r} (choose from {', '.join(FORMATS)})")
    started = time.monotonic()
    warcs, warnings = open_warcs(archive)
    check_output(output, options.format)
    plan = build_plan(warcs, options.timestamp)
    if not plan.items:
        raise ArchiveError(f"{archive} holds no capture that can be exported (no successful response)")
    errors = [*warcs.problems, *plan.errors]
    result = ExportResult(archive, output, options.format, warnings=warnings, errors=errors)
    missing = MissingLinks(plan, crawl_log_reasons(archive))
    result.missing = missing
    digest = plan_hash(plan, options)
    sink: Sink = DirSink(output, digest) if options.format == "dir" else ZipSink(output)
    try:
        blocked = {url: sink.blocked(path) for url, path in sorted(plan.paths.items())}
        result.errors.extend(f"{url}: {why}" for url, why in blocked.items() if why)
        plan.drop({url: why for url, why in blocked.items() if why})
        _write_files(warcs, plan, sink, missing, options, result)
        _write_extras(archive, plan, sink, result)
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    result.files = sink.written + sink.unchanged
    result.written, result.unchanged, result.removed = sink.written, sink.unchanged, sink.removed
    result.bytes = sink.size
    result.seconds = time.monotonic() - started
    return result


def _write_files(
    warcs: WarcArchive,
    plan: Plan,
    sink: Sink,
    missing: MissingLinks,
    options: ExportOptions,
    result: ExportResult,
) -> None:
    order = sorted(plan.items.values(), key=lambda i: (i.capture.filename, i.capture.offset, i.url))
    for item in order:
        path = plan.paths[item.url]
        dom = rendered_dom(warcs, item.capture) if item.mime in HTML_TYPES else None
        source = _source(item) + (f"+dom:{dom.filename}:{dom.offset}" if dom is not None else "")
        known = sink.fresh(path, source)
        if known is not None:
            for url, kind in known.missing or ():
                missing.add(url, kind, item.url)
            continue
        mtime = mtime_of(item.capture.timestamp)
        links = FileLinks(plan, path, item.url, missing)
        try:
            if item.location is not None:
                target = plan.final(item.location)
                href = relative_href(path, plan.paths[target.url]) if target is not None else None
                if target is None:
                    links.add_missing(item.location, "page")
                data = redirect_page(item.status, item.location, href)
            elif dom is not None:  # a --browser crawl's page: as rendered, not its script shell
                data = render_snapshot(item, warcs.read(dom), links, options.mark_missing)
                result.rendered += 1
            else:
                data = render(item, warcs.read(item.capture), links, options.mark_missing)
            sink.put(path, data, url=item.url, source=source, mtime=mtime, missing=links.found or None)
        except (ArchiveError, Blocked) as exc:
            result.errors.append(f"{item.url}: {exc}")
        except OSError as exc:
            result.errors.append(f"{item.url}: cannot write {'/'.join(path)}: {exc.strerror or exc}")


def _write_extras(archive: FsPath, plan: Plan, sink: Sink, result: ExportResult) -> None:
    missing = result.missing
    assert missing is not None
    newest = max((item.capture.timestamp for item in plan.items.values()), default="")
    captured = (
        f"{newest[0:4]}-{newest[4:6]}-{newest[6:8]} {newest[8:10]}:{newest[10:12]} UTC" if newest else "?"
    )
    sites = _sites(plan, start_pages(archive, plan))
    title = f"Archive {archive.resolve().name}"
    page = landing_page(
        title, sites, captured=captured, missing_links=missing.link_count, report_href=REPORT_NAME
    )
    sink.put((LANDING_NAME,), page, url="", source="landing", mtime=mtime_of(newest))
    result.report_path = str(result.output / REPORT_NAME) if result.format == "dir" else REPORT_NAME
    report = result.to_json()
    for key in ("files", "written", "unchanged", "removed", "rendered", "bytes", "seconds"):
        report.pop(key, None)
    report["hosts"] = [{"folder": s.host, "files": s.files, "start": s.start_url} for s in sites]
    data = json.dumps(report, indent=1, ensure_ascii=False).encode("utf-8")
    sink.put((REPORT_NAME,), data, url="", source="report", mtime=mtime_of(newest))


__all__ += ["MANIFEST_NAME", "REPORT_NAME"]
