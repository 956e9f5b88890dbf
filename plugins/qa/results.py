"""QA results kept in the archive: ``qa/runs.jsonl`` (one line per run started and finished)
and ``qa/pages-NNNN.jsonl`` (one line per page checked by run NNNN), appended as pages finish.

A torn last line (the process was killed while writing it) is skipped by the readers.
Nothing here imports the browser: `archiver status` and `archiver serve` read these files.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from archiver.api import CONFIG_NAME, QA_FOLDER, STATE_NAME, plural, read_counts, read_history

from .records import PageResult

RUNS_NAME = "runs.jsonl"
BEFORE_PATCH = "before-patch.json"
"""The URLs done and failed in the archive before the last patch's state replaced its crawl's."""
PATCH_CONFIG = "patch.toml"
"""The settings of the patch under way (its roots: the missing URLs), for its resume."""
WORST_KEPT = 20
MAX_HELD_KEPT = 10_000
MAX_RUNS_BYTES = 16 * 1024 * 1024


@dataclass
class Run:
    """One QA run as its lines in ``runs.jsonl`` tell it."""

    number: int
    started: str
    finished: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)


def qa_folder(archive: Path) -> Path:
    return archive / QA_FOLDER


def pages_file(archive: Path, number: int) -> Path:
    return qa_folder(archive) / f"pages-{number:04d}.jsonl"


def read_runs(archive: Path) -> list[Run]:
    """The QA runs of `archive`, oldest first (none when QA never ran)."""
    try:
        with (qa_folder(archive) / RUNS_NAME).open("rb") as file:
            data = file.read(MAX_RUNS_BYTES)
    except OSError:
        return []
    runs: dict[int, Run] = {}
    for line in data.splitlines():
        event = _parse(line)
        if event is None or not isinstance(event.get("run"), int):
            continue
        number = event["run"]
        if event.get("event") == "start":
            runs[number] = Run(number, str(event.get("at", "")))
        elif event.get("event") == "finish" and number in runs:
            runs[number].finished = str(event.get("at", ""))
            runs[number].summary = event.get("summary") or {}
    return [runs[n] for n in sorted(runs)]


def screenshot_path(archive: Path, name: str) -> Path | None:
    """The file of a kept replay screenshot named in a result, never a path outside ``qa/``."""
    parts = name.split("/")
    if len(parts) != 2 or not parts[0].startswith("shots-") or not parts[1].endswith(".png"):
        return None
    if any(not part.replace("-", "").replace(".", "").isalnum() for part in parts):
        return None
    path = qa_folder(archive) / name
    return path if path.is_file() else None


def read_pages(archive: Path, number: int) -> Iterator[PageResult]:
    """The pages run `number` checked, in the order they finished."""
    try:
        file = pages_file(archive, number).open("rb")
    except OSError:
        return
    with file:
        for line in file:
            data = _parse(line)
            if data is not None and isinstance(data.get("url"), str):
                yield PageResult.from_json(data)


def latest_results(archive: Path) -> dict[str, PageResult]:
    """The newest result of each page checked by any run, by URL."""
    found: dict[str, PageResult] = {}
    for run in read_runs(archive):
        for page in read_pages(archive, run.number):
            found[page.url] = page
    return found


class RunWriter:
    """Appends a run's page results as they come, and its start and finish lines."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        folder = qa_folder(archive)
        folder.mkdir(exist_ok=True)
        runs = read_runs(archive)
        self.number = runs[-1].number + 1 if runs else 1
        self._file: TextIO | None = None

    def start(self, pages: int) -> None:
        self._append_run({"event": "start", "run": self.number, "at": _now(), "pages": pages})
        self._file = pages_file(self.archive, self.number).open("a", encoding="utf-8")

    def keep_screenshot(self, url: str, timestamp: str, png: bytes) -> str:
        """Save a replay screenshot; its name under ``qa/``."""
        name = f"shots-{self.number:04d}/{hashlib.sha1(f'{url} {timestamp}'.encode()).hexdigest()[:20]}.png"
        path = qa_folder(self.archive) / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        return name

    def page(self, result: PageResult) -> None:
        assert self._file is not None
        self._file.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
        self._file.flush()

    def finish(self, summary: Summary) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._append_run({"event": "finish", "run": self.number, "at": _now(), "summary": summary.to_json()})

    def _append_run(self, event: dict[str, Any]) -> None:
        line = (json.dumps(event, ensure_ascii=False) + "\n").encode()
        fd = os.open(qa_folder(self.archive) / RUNS_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            os.write(fd, line)
        finally:
            os.close(fd)


@dataclass
class Summary:
    """What a run found, in bounded memory: counts, and the worst pages only."""

    checked: int = 0
    complete: int = 0
    missing_by_kind: Counter[str] = field(default_factory=Counter)
    missing_by_host: Counter[str] = field(default_factory=Counter)
    live_requests: int = 0
    console_errors: int = 0
    worst: list[PageResult] = field(default_factory=list)
    gone_urls: set[str] = field(default_factory=set)
    """URLs the archive holds as errors (404, ...): gone from the site when fetched, never patched."""
    held_by_archive: dict[str, str] = field(default_factory=dict)
    """URLs a page could not get (missing, or aimed at the live web) that the archive holds:
    for an export, what the mirror lacks that the archive has; for the replay, a rewriting gap."""
    missing_urls: dict[str, str] = field(default_factory=dict)
    """Each missing URL once, with who asked for it first (bounded by what the archive lacks)."""

    def add(self, result: PageResult) -> None:
        self.checked += 1
        self.complete += result.complete
        self.live_requests += len(result.live)
        self.console_errors += len(result.console_errors)
        self.gone_urls.update(request.url for request in result.requests if request.gone)
        for request in result.requests:
            if request.archive_has and len(self.held_by_archive) < MAX_HELD_KEPT:
                self.held_by_archive.setdefault(request.url, request.by)
        for request in result.missing:
            if request.url not in self.missing_urls:
                self.missing_urls[request.url] = request.by
                self.missing_by_kind[request.by] += 1
                self.missing_by_host[request.host] += 1
        if not result.complete or _scored_below_top(result):
            self.worst.append(result)
            self.worst.sort(key=lambda r: r.badness)
            del self.worst[WORST_KEPT:]

    def to_json(self) -> dict[str, Any]:
        return {
            "pages_checked": self.checked,
            "pages_complete": self.complete,
            "missing_resources": len(self.missing_urls),
            "missing_by_kind": dict(self.missing_by_kind.most_common()),
            "missing_by_host": dict(self.missing_by_host.most_common()),
            "archived_as_errors": len(self.gone_urls),
            "lacking_but_archived": sorted(self.held_by_archive),
            "live_requests_blocked": self.live_requests,
            "console_errors": self.console_errors,
            "worst_pages": [
                {
                    "url": r.url,
                    "missing": [m.url for m in r.missing][:50],
                    "live": [m.url for m in r.live][:50],
                    "screenshot_score": r.screenshot_score,
                    "text_score": r.text_score,
                    "notes": r.notes,
                }
                for r in self.worst
            ],
        }


def counts_before_patch(archive: Path) -> dict[str, int]:
    """URLs done and failed in the archive outside the last patch's state (`start_fresh`)."""
    try:
        data = json.loads((qa_folder(archive) / BEFORE_PATCH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, int) and value >= 0}


def whole_archive_words(archive: Path) -> str | None:
    """For `archiver status` after a patch: the archive's counts, the patch's share in them."""
    runs = read_history(archive)
    state = archive / STATE_NAME
    earlier = counts_before_patch(archive)
    if not runs or runs[-1].mode != "patch" or not earlier or not state.is_file():
        return None
    patch = read_counts(state)
    done, failed = earlier.get("done", 0) + patch.done, earlier.get("failed", 0) + patch.failed
    return f"done {done}, failed {failed} (the last patch: done {patch.done}, failed {patch.failed})"


def _scored_below_top(result: PageResult) -> bool:
    return any(s is not None and s < 0.99 for s in (result.screenshot_score, result.text_score))


def status_lines(archive: Path) -> Iterable[tuple[str, Any]] | None:
    """`archiver status`: when QA last ran and what it found."""
    runs = read_runs(archive) if archive.is_dir() else []
    if not runs:
        return None
    lines: list[tuple[str, Any]] = []
    patch = interrupted_words(archive)
    if patch is not None:
        lines.append(("QA patch", patch))
    whole = whole_archive_words(archive)
    if whole is not None:
        lines.append(("whole archive", whole))
    last = runs[-1]
    if last.finished is None:
        return [*lines, ("last QA", f"run {last.number} started {last.started}, not finished")]
    s = last.summary
    found = (
        f"run {last.number} at {last.finished}: {plural(int(s.get('pages_checked', 0)), 'page')} checked, "
        f"{int(s.get('pages_complete', 0)):,} complete,"
        f" {plural(int(s.get('missing_resources', 0)), 'resource')} missing"
    )
    return [*lines, ("last QA", found)]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def interrupted_words(archive: Path) -> str | None:
    """For `archiver status`: a patch that was killed leaves the archive's settings aside."""
    if (qa_folder(archive) / CONFIG_NAME).is_file() or (qa_folder(archive) / PATCH_CONFIG).is_file():
        return f"interrupted; run `archiver qa --patch {archive}` to finish it"
    return None
