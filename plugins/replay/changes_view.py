"""The pages about change: a text diff between two captures of a URL, and what each crawl changed."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from archiver.api import UsageError

from ..archive_reader.changes import KINDS, Change, Comparison, Kind, capture_kind, plan
from ..archive_reader.changes_report import count_line, describe_run, listed_kinds
from .diffing import CaptureText, capture_text, side_by_side, unified
from .library import ArchiveHandle, Found, site_of
from .slots import Slots
from .templating import LIBRARY, render

_TIMESTAMP = re.compile(r"[0-9]{14}")
_NUMBER = re.compile(r"[0-9]{1,6}")
MAX_URL = 8192
CHANGES_SHOWN = 500
DIFFS_AT_ONCE = 2
DIFFS_WAITING = 4
DIFF_SLOTS = web.AppKey("diff_slots", Slots)
"""URLs listed per kind on the changes page; the counts cover them all."""

KIND_LABELS = {
    "response": "response",
    "server-not-modified": "revisit: server not modified (304)",
    "identical-payload": "revisit: identical payload",
}


def describe_capture(found: Found) -> str:
    """How a capture was recorded, as the captures list and the diff page name it."""
    capture = found.capture
    if capture.status in (404, 410):
        return f"not found ({capture.status})"
    return KIND_LABELS[capture_kind(capture)]


def _url(request: web.Request) -> str:
    url = request.query.get("url", "").strip()
    if not url or len(url) > MAX_URL:
        raise web.HTTPBadRequest(
            reason="No URL", text="give the URL whose captures to compare: /diff?url=URL"
        )
    return url


def _pick(found: list[Found], stamp: str, default: Found) -> Found:
    if not stamp:
        return default
    if not _TIMESTAMP.fullmatch(stamp):
        raise web.HTTPBadRequest(reason="Bad timestamp", text=f"not a 14-digit timestamp: {stamp!r}")
    for entry in found:
        if entry.capture.timestamp == stamp:
            return entry
    raise web.HTTPNotFound(reason="No such capture", text=f"no capture of this URL at {stamp}")


@dataclass(frozen=True, slots=True)
class Compared:
    left: CaptureText
    right: CaptureText
    rows: list[Any]
    lines: list[str]
    coarse: bool
    """Lined up only by the texts' common start and end: the detailed diff cost too much."""


def _compare(left: Found, right: Found, view: str) -> Compared:
    a = capture_text(left)
    b = capture_text(right)
    if view == "side":
        rows, coarse = side_by_side(a.lines, b.lines)
        return Compared(a, b, rows, [], coarse)
    lines, coarse = unified(a.lines, b.lines, left.capture.timestamp, right.capture.timestamp)
    return Compared(a, b, [], lines, coarse)


async def diff_page(request: web.Request) -> web.Response:
    """``/diff?url=URL&a=TIMESTAMP&b=TIMESTAMP&view=unified|side``: the two captures' visible text diffed.

    Without `a` and `b` the two newest captures are compared.
    """
    url = _url(request)
    view = "side" if request.query.get("view") == "side" else "unified"
    found = await asyncio.to_thread(request.app[LIBRARY].history, url)
    if not found:
        raise web.HTTPNotFound(reason="Not archived", text="this URL is not in the archive")
    left = _pick(found, request.query.get("a", ""), found[-2] if len(found) > 1 else found[-1])
    right = _pick(found, request.query.get("b", ""), found[-1])
    if left.capture.timestamp > right.capture.timestamp:
        left, right = right, left
    compared = await request.app[DIFF_SLOTS].run(lambda: _compare(left, right, view))
    return render(
        request,
        "diff.html",
        section="browse",
        url=url,
        site=site_of(url),
        view=view,
        left=compared.left,
        right=compared.right,
        left_kind=describe_capture(left),
        right_kind=describe_capture(right),
        rows=compared.rows,
        lines=compared.lines,
        coarse=compared.coarse,
        same=compared.left.lines == compared.right.lines,
    )


@dataclass
class ChangesPage:
    handle: ArchiveHandle
    comparison: Comparison
    headline: str
    counts: str
    lists: dict[Kind, list[Change]]


def _changes(handle: ArchiveHandle, crawl: int | None, unchanged: bool) -> ChangesPage:
    with plan(handle.folder, crawl=crawl) as comparison:
        comparison.run()
        lists = {kind: list(comparison.changes(kind, CHANGES_SHOWN)) for kind in listed_kinds(unchanged)}
    if comparison.compared:
        assert comparison.older is not None
        older, newer = comparison.older.crawls[0], comparison.newer.crawls[0]
        headline = f"{describe_run(newer)} against {describe_run(older)}"
    elif len(comparison.runs) > 1:
        headline = f"{describe_run(comparison.runs[0])} is the first crawl: nothing came before it."
    elif comparison.runs:
        headline = (
            f"This archive holds one crawl ({describe_run(comparison.runs[0])}): nothing to compare yet."
        )
    else:
        headline = (
            "This archive has no crawl history (it was made before crawls were numbered):"
            " all its captures count as one crawl, so nothing is compared."
        )
    return ChangesPage(handle, comparison, headline, count_line(comparison), lists)


async def changes_page(request: web.Request) -> web.Response:
    """``/changes?archive=NAME&crawl=N&unchanged=1``: what crawl N (default: the last) changed,
    as `archiver changes`: the unchanged URLs are counted, and listed with ``unchanged=1``."""
    library = request.app[LIBRARY]
    name = request.query.get("archive", "")
    if name and name not in library.by_name:
        raise web.HTTPNotFound(reason="No such archive", text=f"no archive called {name!r}")
    handle = library.by_name[name] if name else library.handles[0]
    raw = request.query.get("crawl", "")
    crawl = int(raw) if _NUMBER.fullmatch(raw) else None
    unchanged = request.query.get("unchanged", "") not in ("", "0")
    try:
        page = await asyncio.to_thread(_changes, handle, crawl, unchanged)
    except UsageError as exc:
        raise web.HTTPNotFound(reason="No such crawl", text=str(exc)) from None
    comparison = page.comparison
    return render(
        request,
        "changes.html",
        section="changes",
        handle=handle,
        page=page,
        runs=comparison.runs,
        current=comparison.newer.crawls[0].number if comparison.compared else None,
        kinds=KINDS,
        shown=CHANGES_SHOWN,
        crawl=raw if crawl is not None else "",
        unchanged=unchanged,
    )
