"""The UI pages: search, browse, per-URL history, crawl status, and "not archived"."""

from __future__ import annotations

import asyncio
import re
from datetime import date
from typing import Any

from aiohttp import web

from .changes_view import describe_capture
from .library import TYPE_GROUPS, Catalog, Library, UrlEntry, site_of, type_group
from .render import FOLLOWERS, LIBRARY, link_url, render
from .renderings import LABELS, rendered_path
from .renderings import kind_of as rendered_kind
from .replay import replay_path
from .searching import Filters, run_search
from .status import LOG_NAME, LogFollower, crawl_status
from .target import parse_target

_DIGITS = re.compile(r"[0-9]{1,5}")
PER_PAGE = 10
URLS_PER_PAGE = 100
CAPTURES_PER_PAGE = 100
MAX_PAGE = 1000
MAX_QUERY = 500
TYPE_CHOICES = (
    ("", "any"),
    ("text/html", "HTML pages"),
    ("text/plain", "plain text"),
    ("application/pdf", "PDF"),
)


def _page(request: web.Request) -> int:
    """The page asked for, 1 for anything but a few ASCII digits ('²'.isdigit() is true too)."""
    raw = request.query.get("page", "1")
    return min(max(int(raw), 1), MAX_PAGE) if _DIGITS.fullmatch(raw) else 1


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


def _page_numbers(page: int, pages: int) -> list[int]:
    return list(range(max(1, page - 4), min(pages, page + 4) + 1))


async def search_page(request: web.Request) -> web.Response:
    library = request.app[LIBRARY]
    query = request.query
    q = query.get("q", "").strip()[:MAX_QUERY]
    site = query.get("site", "").strip().lower()[:200]
    ctype = query.get("type", "").strip()[:100]
    date_from, date_to = query.get("from", "")[:10], query.get("to", "")[:10]
    archive = query.get("archive", "")
    problems: list[str] = []
    filters = Filters(
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
    page = _page(request)
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
        page_numbers=_page_numbers(page, results.pages) if results else [],
    )


def _catalogs(library: Library) -> list[tuple[str, Catalog]]:
    return [(h.name, h.catalog()) for h in library.handles]


async def browse_page(request: web.Request) -> web.Response:
    library = request.app[LIBRARY]
    catalogs = await asyncio.to_thread(_catalogs, library)
    site = request.query.get("site", "")
    if site:
        return _site_page(request, site, catalogs)
    merged: dict[str, dict[str, Any]] = {}
    urls: dict[str, set[str]] = {}  # a URL archived in several archives is one URL of its site
    for name, catalog in catalogs:
        for host, summary in catalog.sites.items():
            row = merged.setdefault(
                host,
                {"host": host, "urls": 0, "captures": 0, "first": summary.first, "last": "", "archives": []},
            )
            urls.setdefault(host, set()).update(entry.url for entry in catalog.urls.get(host, []))
            row["urls"] = len(urls[host])
            row["captures"] += summary.captures
            row["first"] = min(row["first"], summary.first)
            row["last"] = max(row["last"], summary.last)
            row["archives"].append(name)
    sites = sorted(merged.values(), key=lambda r: (-r["captures"], r["host"]))
    return render(request, "browse.html", section="browse", sites=sites)


def _site_page(request: web.Request, site: str, catalogs: list[tuple[str, Catalog]]) -> web.Response:
    q = request.query.get("q", "")[:MAX_QUERY]
    group = request.query.get("type", "")
    by_url: dict[str, UrlEntry] = {}
    rendered: dict[str, str] = {}
    for _name, catalog in catalogs:
        rendered.update(catalog.rendered)
        for entry in catalog.urls.get(site, []):
            known = by_url.get(entry.url)
            if known is None:
                by_url[entry.url] = entry
            else:
                latest = max(known.latest, entry.latest, key=lambda c: c.timestamp)
                by_url[entry.url] = UrlEntry(entry.url, latest, known.count + entry.count)
    entries = sorted(by_url.values(), key=lambda e: e.url)
    if not entries:
        raise web.HTTPNotFound(reason="Site not archived", text=f"nothing archived from {site}")
    needle = q.lower()
    if needle:
        entries = [e for e in entries if needle in e.url.lower()]
    if group in TYPE_GROUPS:
        entries = [e for e in entries if type_group(e.latest.mime) == group]
    total = len(entries)
    pages = max(1, -(-total // URLS_PER_PAGE))
    page = min(_page(request), pages)
    shown = entries[(page - 1) * URLS_PER_PAGE : page * URLS_PER_PAGE]
    return render(
        request,
        "site.html",
        section="browse",
        site=site,
        q=q,
        group_filter=group if group in TYPE_GROUPS else "",
        type_groups=TYPE_GROUPS,
        entries=shown,
        rendered=rendered,
        total=total,
        page=page,
        pages=pages,
    )


async def history_page(request: web.Request) -> web.Response:
    url = request.query.get("url", "").strip()
    if not url or len(url) > 8192:
        raise web.HTTPBadRequest(
            reason="No URL", text="give the URL whose captures to list: /history?url=URL"
        )
    found = await asyncio.to_thread(request.app[LIBRARY].history, url)
    renderings = await asyncio.to_thread(request.app[LIBRARY].renderings, url) if found else []
    status = 200 if found else 404
    total = len(found)
    pages = max(1, -(-total // CAPTURES_PER_PAGE))
    page = min(_page(request), pages)
    end = total - (page - 1) * CAPTURES_PER_PAGE  # newest first
    shown = found[max(end - CAPTURES_PER_PAGE, 0) : end][::-1]
    return render(
        request,
        "history.html",
        status=status,
        section="browse",
        url=url,
        site=site_of(url),
        found=shown,
        total=total,
        page=page,
        pages=pages,
        page_numbers=_page_numbers(page, pages),
        kind_of=describe_capture,
        renderings=renderings,
        rendered_path=rendered_path,
        rendered_label=lambda f: LABELS[rendered_kind(f)],
    )


async def missing_page(request: web.Request) -> web.StreamResponse:
    """A link the archive cannot follow; if the page arrived since (a running crawl), go there."""
    target = parse_target(request, "/missing/")
    found = await asyncio.to_thread(request.app[LIBRARY].nearest, target.url, target.timestamp)
    if found is not None:
        raise web.HTTPFound(link_url(replay_path(found.capture.timestamp, target.url)))
    return missing_response(request, target.url)


def missing_response(request: web.Request, url: str) -> web.Response:
    return render(request, "missing.html", status=404, section="", url=url, site=site_of(url))


async def status_page(request: web.Request) -> web.Response:
    library = request.app[LIBRARY]
    followers = request.app[FOLLOWERS]
    statuses = []
    for handle in library.handles:
        folder = handle.folder
        follower = followers.get(handle.name)
        if follower is None and (folder / LOG_NAME).is_file():
            follower = followers.setdefault(handle.name, LogFollower(folder / LOG_NAME))
        statuses.append(await asyncio.to_thread(crawl_status, handle.name, folder, follower))
    return render(
        request,
        "status.html",
        section="status",
        statuses=statuses,
        any_running=any(s.running for s in statuses),
    )
