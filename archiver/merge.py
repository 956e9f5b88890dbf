"""`archiver merge`: archives written side by side (one per worker of a shared crawl) made one.

The core combines what it wrote itself (the crawl logs end to end, one report, the
configuration made local); each plugin brings its own files over through the
`archive_merged` hook: the WARC plugin links or copies the WARC files and merges their
CDXJ indexes, the index plugin joins the full-text indexes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from .archive import dump_toml, require_archive
from .errors import ArchiveError, UsageError
from .layout import CONFIG_NAME, CRAWL_LOG_NAME, REPORT_NAME, WARC_FOLDER
from .lock import ArchiveLock, is_locked, read_holder
from .manager import Hooks, make_plugin_manager


@dataclass
class MergeResult:
    archive: Path
    sources: list[Path]
    seconds: float = 0.0
    counts: dict[str, Any] = field(default_factory=dict)
    """What the plugins did (WARC files linked, captures indexed), by name."""
    summaries: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        sources = [str(s) for s in self.sources]
        return {"archive": str(self.archive), "sources": sources, **self.counts, "seconds": self.seconds}


def merge_archives(
    sources: Sequence[Path],
    archive: Path,
    *,
    copy: bool = False,
    plugin_manager: pluggy.PluginManager | None = None,
) -> MergeResult:
    """Combine `sources` into `archive`; `copy` asks the plugins to copy files rather than link them."""
    started = time.monotonic()
    result = MergeResult(archive, list(sources))
    resolved = archive.resolve()
    for source in sources:
        if require_archive(source, also=(WARC_FOLDER,)).resolve() == resolved:
            raise UsageError(f"{source} is the output: give another folder to -o")
        if is_locked(source):
            holder = read_holder(source)
            who = holder.describe() if holder else "another process"
            raise ArchiveError(f"{source} is being written by {who}; merge it when its crawl has ended")
    with ArchiveLock(archive):
        _write_shared_files(archive, sources)
        hooks = Hooks(plugin_manager or make_plugin_manager())
        for answer in hooks.archive_merged(archive, sources, copy):
            counts = dict(answer)
            summary = counts.pop("summary", None)
            if summary:
                result.summaries.append(str(summary))
            result.counts.update(counts)
    result.seconds = time.monotonic() - started
    return result


def _write_shared_files(archive: Path, sources: Sequence[Path]) -> None:
    """crawl.toml (the first source's, made local), the crawl logs end to end, one report."""
    archive.mkdir(parents=True, exist_ok=True)
    first = next((s / CONFIG_NAME for s in sources if (s / CONFIG_NAME).is_file()), None)
    if first is not None:
        with first.open("rb") as handle:
            tables = tomllib.load(handle)
        crawl = tables.setdefault("crawl", {})
        crawl["output"] = str(archive)
        crawl["frontier"] = "memory"  # the merged archive is finished: no frontier to resume
        (archive / CONFIG_NAME).write_text(dump_toml(tables), encoding="utf-8")
    with (archive / (CRAWL_LOG_NAME + ".tmp")).open("wb") as out:
        for source in sources:
            log_path = source / CRAWL_LOG_NAME
            if log_path.is_file():
                with log_path.open("rb") as handle:
                    shutil.copyfileobj(handle, out)
    os.replace(archive / (CRAWL_LOG_NAME + ".tmp"), archive / CRAWL_LOG_NAME)
    report = _merge_reports(archive, sources)
    (archive / REPORT_NAME).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _merge_reports(archive: Path, sources: Sequence[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "archive": str(archive),
        "merged_from": [str(s) for s in sources],
        "complete": True,
    }
    without_report: list[str] = []
    totals: Counter[str] = Counter()
    tables: dict[str, Counter[str]] = {}
    starts: list[str] = []
    ends: list[str] = []
    roots: list[str] = []
    for source in sources:
        try:
            report = json.loads((source / REPORT_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            merged["complete"] = False
            without_report.append(str(source))
            continue
        merged["complete"] = merged["complete"] and bool(report.get("complete"))
        for key in ("pages", "failed", "bytes", "redirects", "retries"):
            totals[key] += int(report.get(key, 0))
        for key in ("by_status_class", "errors_by_kind", "skipped_by_reason", "plugins"):
            tables.setdefault(key, Counter()).update(report.get(key) or {})
        starts.append(report.get("started_at", ""))
        ends.append(report.get("finished_at", ""))
        roots.extend(r for r in report.get("roots", []) if r not in roots)
    merged.update(totals)
    merged.update({key: dict(sorted(value.items())) for key, value in tables.items()})
    merged["roots"] = roots
    if starts:
        merged["started_at"], merged["finished_at"] = min(starts), max(ends)
    if without_report:
        merged["without_report"] = without_report  # killed: their pages are in the WARC files
    return merged
