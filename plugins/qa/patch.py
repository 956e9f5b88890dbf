"""``archiver qa --patch``: fetch what QA found missing, as a numbered crawl of mode ``patch``.

The missing URLs are queued as requisites of the pages that lacked them, in a crawl into
the archive itself with the archive's own settings and roots: its scope and patterns,
politeness, robots.txt, the address guard, where its credentials go, the WARC files and the
crawl log are those of its crawl (a URL the crawl refused is refused again, a header meant
for the roots' hosts goes nowhere else).  Nothing they link to as a page is followed; what
a fetched stylesheet needs (its ``@import``, its fonts) is, as a requisite.  The crawl's
frontier is kept in ``state.sqlite`` (as for ``--update``, the finished crawl's state is
replaced), so a patch killed at any point resumes where it stopped, and what it stored is
never fetched again.

The archive's ``crawl.toml`` holds its own crawl's settings (``--resume`` and ``--update``
read them); a crawl saves its settings there, so the archive's are kept in
``qa/crawl.toml`` while a patch runs and put back when it ends (or when the next
``qa --patch`` finds a patch killed).  Each URL given to a patch is written to
``qa/patched.jsonl`` before the crawl starts and is never given to a patch again: one that
is gone (404) is archived as such, and one that failed stays out of later patches.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver.api import (
    COMPLETE,
    CONFIG_NAME,
    NEW,
    NOT_RESUMABLE,
    REPORT_NAME,
    RESUMABLE,
    RUNNING,
    STATE_NAME,
    ArchiveLockedError,
    UsageError,
    archive_status,
    dump_toml,
    load_config,
    read_counts,
    read_history,
    write_private,
)

from .results import BEFORE_PATCH, PATCH_CONFIG, counts_before_patch, latest_results, qa_folder

PATCHED = "patched.jsonl"
PATCH_QUEUE = "patch-queue.json"
"""The patch under way's (url, page that lacked it) pairs, for its resume."""


@dataclass(frozen=True)
class PatchPlan:
    """What `archiver qa --patch` does before checking: resume a patch, or start one."""

    resume: bool


def plan_patch(archive: Path) -> PatchPlan:
    """Whether a killed or interrupted patch is to be resumed; an error when no patch may run."""
    restore_config(archive)
    status = archive_status(archive)
    if status.state == RUNNING:
        who = status.holder.describe() if status.holder else "another process"
        raise ArchiveLockedError(f"{archive} is being written by {who}; wait for it or stop it first")
    if not (archive / CONFIG_NAME).is_file():
        raise UsageError(f"{archive} has no {CONFIG_NAME}: a patch crawls with the settings of its crawl")
    runs = read_history(archive)
    interrupted = bool(runs) and runs[-1].mode == "patch" and not runs[-1].complete
    if status.state == RESUMABLE and interrupted and (qa_folder(archive) / PATCH_CONFIG).is_file():
        return PatchPlan(resume=True)
    if status.state == RESUMABLE:
        raise UsageError(
            f"{archive} holds an interrupted crawl: finish it first (archiver crawl --resume {archive})"
        )
    if status.state not in (COMPLETE, NOT_RESUMABLE, NEW):
        raise UsageError(f"{archive}: no patch while its crawl is {status.state}")
    return PatchPlan(resume=False)


def already_patched(archive: Path) -> set[str]:
    """Every URL an earlier patch was given (fetched, gone or failed)."""
    try:
        lines = (qa_folder(archive) / PATCHED).read_bytes().splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            found.add(data["url"])
    return found


def record_patched(archive: Path, urls: Iterable[str]) -> None:
    at = datetime.now(UTC).isoformat(timespec="seconds")
    lines = "".join(json.dumps({"url": url, "at": at}, ensure_ascii=False) + "\n" for url in urls)
    with (qa_folder(archive) / PATCHED).open("a", encoding="utf-8") as file:
        file.write(lines)
        file.flush()
        os.fsync(file.fileno())


def patch_config(
    archive: Path, wanted: list[tuple[str, str]], resume: bool
) -> tuple[Any, list[tuple[str, str]]]:
    """The configuration of the patch and its (url, page) pairs: saved under ``qa/`` for a
    resume, read back from there.  The configuration is the archive's own, roots included."""

    saved = qa_folder(archive) / PATCH_CONFIG
    queue = qa_folder(archive) / PATCH_QUEUE
    if resume:
        return load_config(saved, {"output": str(archive)}), _read_queue(queue)
    config = load_config(archive / CONFIG_NAME, {"frontier": "sqlite", "output": str(archive)})
    write_private(queue, json.dumps([list(pair) for pair in wanted], ensure_ascii=False))
    write_private(saved, dump_toml(config.to_toml_dict()))
    return config, wanted


def _read_queue(path: Path) -> list[tuple[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # a patch from before the queue was kept: its frontier holds what is left
    if not isinstance(data, list):
        return []
    return [
        (pair[0], pair[1])
        for pair in data
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)
    ]


def lacking(archive: Path, urls: Iterable[str]) -> list[tuple[str, str]]:
    """Each of `urls` with the first page (by URL) whose newest QA result named it missing."""
    wanted = set(urls)
    found: dict[str, str] = {}
    for page in sorted(latest_results(archive).values(), key=lambda result: result.url):
        for request in page.missing:
            if request.url in wanted and request.url not in found:
                found[request.url] = page.url
    return [(url, found[url]) for url in urls if url in found]


def keep_config(archive: Path) -> None:
    """Put the archive's ``crawl.toml`` aside before a patch crawl writes its own there."""
    kept = qa_folder(archive) / CONFIG_NAME
    if not kept.exists():
        write_private(kept, (archive / CONFIG_NAME).read_text(encoding="utf-8"))


def restore_config(archive: Path) -> None:
    """Put the archive's own ``crawl.toml`` back (after a patch, or one that was killed)."""
    kept = qa_folder(archive) / CONFIG_NAME
    if kept.is_file():
        os.replace(kept, archive / CONFIG_NAME)


def start_fresh(archive: Path) -> None:
    """Drop the finished crawl's frontier, as ``--update`` does: the patch keeps its own there.

    Its totals are added to those kept in ``qa/before-patch.json`` first: with them `status`
    gives the whole archive's counts, the state file holding only the last patch's."""
    runs = read_history(archive)
    earlier = counts_before_patch(archive) if runs and runs[-1].mode == "patch" else {}
    dropped = _last_crawl_counts(archive)
    if dropped is not None:
        totals = {key: earlier.get(key, 0) + dropped[key] for key in ("done", "failed")}
        kept = qa_folder(archive) / BEFORE_PATCH
        temporary = kept.with_suffix(".tmp")
        temporary.write_text(json.dumps(totals) + "\n", encoding="utf-8")
        os.replace(temporary, kept)
    for suffix in ("", "-wal", "-shm"):
        (archive / (STATE_NAME + suffix)).unlink(missing_ok=True)


def _last_crawl_counts(archive: Path) -> dict[str, int] | None:
    """URLs done and failed by the archive's last crawl: its state file's totals, or its
    report's for a crawl that kept no state (memory frontier)."""
    state = archive / STATE_NAME
    if state.is_file():
        counts = read_counts(state)
        return {"done": counts.done, "failed": counts.failed}
    try:
        report = json.loads((archive / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict):
        return None
    done, failed = report.get("pages"), report.get("failed")
    if not isinstance(done, int) or not isinstance(failed, int):
        return None
    return {"done": done, "failed": failed}


def finished(archive: Path, complete: bool) -> None:
    restore_config(archive)
    if complete:
        (qa_folder(archive) / PATCH_CONFIG).unlink(missing_ok=True)
        (qa_folder(archive) / PATCH_QUEUE).unlink(missing_ok=True)


def pages_lacking(archive: Path, urls: Iterable[str]) -> set[str]:
    """The pages whose newest QA result named one of `urls` as missing: those to check again."""
    wanted = set(urls)
    return {
        page.url
        for page in latest_results(archive).values()
        if any(request.url in wanted for request in page.missing)
    }
