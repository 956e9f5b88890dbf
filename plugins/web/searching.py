"""The search page of ``archiver serve``: full-text search over the served archives, through the
index plugin's `search` API.

Each archive has its own index; with several archives the best results of each are
merged by score.  The site, content-type and date filters are the index's own, so the
counts and the pages are exact.  Titles and URLs come back from the index as the pages wrote them
and are escaped by the templates; the snippet is HTML the highlighter escaped, and
`safe_snippet` checks that again before it is trusted, so a bug in one layer is not
an injection.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from aiohttp import web
from markupsafe import Markup

from archiver.api import ArchiverError

from ..replay.library import ArchiveHandle
from ..replay.templating import LIBRARY, render
from ..replay.views import MAX_QUERY, page_asked, page_numbers

_MARK = re.compile(r'(<b class="match term\d+">|</b>)')


def safe_snippet(snippet: str) -> Markup:
    """The highlighter's snippet, keeping only its ``<b class="match termN">`` marks.

    Text between the marks is already escaped; any ``<`` or ``>`` left in it means it
    was not, and that piece is escaped here.  Unbalanced marks are closed.
    """
    out: list[str] = []
    open_marks = 0
    for piece in _MARK.split(snippet or ""):
        if _MARK.fullmatch(piece):
            if piece == "</b>":
                if open_marks:
                    open_marks -= 1
                    out.append(piece)
            else:
                open_marks += 1
                out.append(piece)
        elif "<" in piece or ">" in piece or '"' in piece:
            out.append(html.escape(piece, quote=True))
        else:
            out.append(piece)
    out.append("</b>" * open_marks)
    return Markup("".join(out))


@dataclass(frozen=True, slots=True)
class ShownHit:
    url: str
    title: str
    time: str
    snippet: Markup
    score: float
    host: str
    content_type: str
    archive: str


@dataclass
class Results:
    query: str
    hits: list[ShownHit] = field(default_factory=list)
    total: int = 0
    page: int = 1
    per_page: int = 10
    suggestions: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    approximate: bool = False
    """The search hit its time limit: `total` is a lower bound."""

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True, slots=True)
class FormFilters:
    site: str = ""
    content_type: str = ""
    date_from: str = ""
    date_to: str = ""
    """Dates as 14-digit timestamps (``date_to`` inclusive, already padded with 9s)."""


@dataclass
class _Answer:
    hits: list[ShownHit]
    total: int
    suggestion: str | None
    notes: list[str]
    approximate: bool = False


def _hit(raw: Any, archive: str) -> ShownHit:
    return ShownHit(
        url=raw.url,
        title=raw.title or "",
        time=raw.time or "",
        snippet=safe_snippet(raw.snippet),
        score=float(raw.score),
        host=raw.host or "",
        content_type=raw.content_type or "",
        archive=archive,
    )


def _notes(result: Any) -> list[str]:
    notes = list(result.notes)
    if result.timed_out:
        notes.append("the search took too long: these are the best results found in time")
    if result.pending:
        notes.append(f"{result.pending:,} archived pages are not in the search index yet")
    return notes


def _search_one(
    handle: ArchiveHandle, text: str, page: int, per_page: int, filters: FormFilters, merging: bool
) -> _Answer:
    """This archive's hits for one page (`merging`: all hits up to that page)."""
    from ..index.search import search

    result = search(
        handle.folder,
        text,
        limit=page * per_page if merging else per_page,
        page=1 if merging else page,
        site=filters.site,
        content_type=filters.content_type,
        time_from=filters.date_from,
        time_to=filters.date_to,
    )
    hits = [_hit(h, handle.name) for h in result.hits]
    return _Answer(hits, result.total, result.suggestion, _notes(result), approximate=result.timed_out)


async def run_search(
    handles: Sequence[ArchiveHandle], query: str, *, page: int, per_page: int, filters: FormFilters
) -> Results:
    """One page of results over `handles`; an archive whose index fails adds an error line."""
    started = time.perf_counter()
    results = Results(query=query, page=page, per_page=per_page)
    merging = len(handles) > 1
    answers = await asyncio.gather(
        *(asyncio.to_thread(_search_one, h, query, page, per_page, filters, merging) for h in handles),
        return_exceptions=True,
    )
    merged: list[ShownHit] = []
    for handle, answer in zip(handles, answers, strict=True):
        if isinstance(answer, ArchiverError):
            results.errors.append(f"{handle.name}: {answer}" if merging else str(answer))
            continue
        if isinstance(answer, BaseException):
            raise answer
        merged.extend(answer.hits)
        results.total += answer.total
        results.approximate |= answer.approximate
        results.notes.extend(f"{handle.name}: {n}" if merging else n for n in answer.notes)
        suggestion = answer.suggestion
        if suggestion and suggestion not in results.suggestions:
            results.suggestions.append(suggestion)
    if results.total:
        # Each archive suggests when it alone found nothing; a respelling is only
        # worth showing when the whole search came back empty.
        results.suggestions.clear()
    if merging:
        merged.sort(key=lambda h: -h.score)
        merged = merged[(page - 1) * per_page : page * per_page]
    results.hits = merged
    results.elapsed = time.perf_counter() - started
    return results


PER_PAGE = 10
TYPE_CHOICES = (
    ("", "any"),
    ("text/html", "HTML pages"),
    ("text/plain", "plain text"),
    ("application/pdf", "PDF"),
)


def _day(value: str, end: bool, problems: list[str]) -> str:
    """An ``<input type=date>`` value as a 14-digit bound, '' when empty or invalid."""
    if not value:
        return ""
    try:
        day = date.fromisoformat(value)
    except ValueError:
        problems.append(f"ignored the date {value!r}: expected YYYY-MM-DD")
        return ""
    return day.strftime("%Y%m%d") + ("235959" if end else "000000")


async def search_page(request: web.Request) -> web.Response:
    library = request.app[LIBRARY]
    query = request.query
    q = query.get("q", "").strip()[:MAX_QUERY]
    site = query.get("site", "").strip().lower()[:200]
    ctype = query.get("type", "").strip()[:100]
    date_from, date_to = query.get("from", "")[:10], query.get("to", "")[:10]
    archive = query.get("archive", "")
    problems: list[str] = []
    filters = FormFilters(
        site=site,
        content_type=ctype,
        date_from=_day(date_from, False, problems),
        date_to=_day(date_to, True, problems),
    )
    handles = library.handles
    if archive:
        handles = [library.by_name[archive]] if archive in library.by_name else []
        if not handles:
            problems.append(f"no archive called {archive!r}")
    results = None
    page = page_asked(request)
    if (q or site) and handles:
        results = await run_search(handles, q, page=page, per_page=PER_PAGE, filters=filters)
    params = {"q": q, "site": site, "type": ctype, "from": date_from, "to": date_to, "archive": archive}
    choices = list(TYPE_CHOICES)
    if ctype and ctype not in dict(choices):
        choices.append((ctype, ctype))
    return render(
        request,
        "search.html",
        section="search",
        q=q,
        site=site,
        ctype=ctype,
        date_from=date_from,
        date_to=date_to,
        archive=archive,
        params=params,
        type_choices=choices,
        filters_used=bool(site or ctype or date_from or date_to or archive),
        results=results,
        problems=problems,
        page_numbers=page_numbers(page, results.pages) if results else [],
    )
