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
import time
from collections import Counter
from pathlib import Path as FsPath

from archiver.api import ArchiveError, UsageError, __version__

from ..archive_reader.reader import WarcArchive
from .contents import HTML_TYPES, redirect_page, render, render_snapshot
from .landing import SiteEntry, landing_page
from .names import MirrorPath, relative_href
from .options import ExportOptions, ExportResult, Progress, check_output, mtime_of, open_warcs, start_pages
from .plan import Item, Plan, build_plan, roots_of
from .rendered import rendered_dom
from .safedir import Blocked
from .sinks import MANIFEST_NAME, DirSink, Sink, ZipSink
from .targets import FileLinks, MissingLinks, crawl_log_reasons

__all__ = ["ExportOptions", "ExportResult", "export_mirror", "open_warcs"]

log = logging.getLogger(__name__)

EXPORT_REPORT_NAME = "export-report.json"
LANDING_NAME = "index.html"
FORMATS = ("dir", "zip", "wacz", "zim", "epub")
DEFAULT_OPTIONS = ExportOptions()


def plan_hash(plan: Plan, options: ExportOptions) -> str:
    digest = hashlib.sha256(f"{__version__}\n{options.mark_missing}\n{options.timestamp}\n".encode())
    for url in sorted(plan.items):
        item = plan.items[url]
        digest.update(f"{url}\t{'/'.join(plan.paths[url])}\t{item.location or ''}\n".encode())
    return digest.hexdigest()


def _source(item: Item) -> str:
    capture = item.capture
    return f"{capture.filename}:{capture.offset}:{capture.digest or ''}"


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


def export_mirror(
    archive: FsPath,
    output: FsPath,
    options: ExportOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
) -> ExportResult:
    """Export `archive` to `output` as a browsable folder, zip or ZIM (`options.format`)."""
    if options.format == "wacz":
        from .wacz import export_wacz

        wacz_result: ExportResult = export_wacz(archive, output, options)
        return wacz_result
    if options.format == "epub":
        from .epub import export_epub

        epub_result: ExportResult = export_epub(archive, output, options, progress)
        return epub_result
    if options.format not in FORMATS:
        raise UsageError(f"unknown format {options.format!r} (choose from {', '.join(FORMATS)})")
    if options.format == "zim":
        from .zim import load_libzim

        load_libzim()  # the extra's one-line error before any work
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
    sink = _open_sink(archive, output, warcs, plan, digest, options)
    try:
        blocked = {url: sink.blocked(path) for url, path in sorted(plan.paths.items())}
        result.errors.extend(f"{url}: {why}" for url, why in blocked.items() if why)
        plan.drop({url: why for url, why in blocked.items() if why})
        _write_files(warcs, plan, sink, missing, options, result, progress)
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


def _open_sink(
    archive: FsPath, output: FsPath, warcs: WarcArchive, plan: Plan, digest: str, options: ExportOptions
) -> Sink:
    if options.format == "dir":
        return DirSink(output, digest)
    if options.format == "zip":
        return ZipSink(output)
    from .zim import open_zim

    return open_zim(archive, output, warcs, plan, options)


def _write_files(
    warcs: WarcArchive,
    plan: Plan,
    sink: Sink,
    missing: MissingLinks,
    options: ExportOptions,
    result: ExportResult,
    progress: Progress | None = None,
) -> None:
    order = sorted(plan.items.values(), key=lambda i: (i.capture.filename, i.capture.offset, i.url))
    for done, item in enumerate(order):
        if progress is not None:
            progress(done, len(order))
        path = plan.paths[item.url]
        dom = rendered_dom(warcs, item.capture) if item.mime in HTML_TYPES else None
        source = _source(item) + (f"+dom:{dom.filename}:{dom.offset}" if dom is not None else "")
        known = sink.fresh(path, source)
        if known is not None:
            for url, kind in known.missing or ():
                missing.add(url, kind, item.url)
            continue
        mtime = mtime_of(item.capture.timestamp)
        links = FileLinks(plan, path, item.url, missing, escape_ampersand=options.format == "zim")
        try:
            if item.location is not None:
                target = plan.final(item.location)
                href = links.href_to(target) if target is not None else None
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
    if progress is not None:
        progress(len(order), len(order))


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
        title, sites, captured=captured, missing_links=missing.link_count, report_href=EXPORT_REPORT_NAME
    )
    sink.put((LANDING_NAME,), page, url="", source="landing", mtime=mtime_of(newest))
    in_output = result.output / EXPORT_REPORT_NAME
    result.report_path = str(in_output) if result.format == "dir" else EXPORT_REPORT_NAME
    report = result.to_json()
    for key in ("files", "written", "unchanged", "removed", "rendered", "bytes", "seconds"):
        report.pop(key, None)
    report["hosts"] = [{"folder": s.host, "files": s.files, "start": s.start_url} for s in sites]
    data = json.dumps(report, indent=1, ensure_ascii=False).encode("utf-8")
    sink.put((EXPORT_REPORT_NAME,), data, url="", source="report", mtime=mtime_of(newest))


__all__ += ["EXPORT_REPORT_NAME", "MANIFEST_NAME"]
