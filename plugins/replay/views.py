"""The UI pages: browse, per-URL history, crawl status, and "not archived" (the search page is the
`web` plugin's, added through the ``register_routes`` hook)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from archiver.api import CRAWL_LOG_NAME

from .changes_view import describe_capture
from .library import TYPE_GROUPS, Catalog, Library, UrlEntry, site_of, type_group
from .renderings import LABELS, rendered_path
from .renderings import kind_of as rendered_kind
from .replay import replay_path
from .status import LogFollower, crawl_status
from .target import parse_target
from .templating import FOLLOWERS, LIBRARY, link_url, render

_DIGITS = re.compile(r"[0-9]{1,5}")
URLS_PER_PAGE = 100
CAPTURES_PER_PAGE = 100
MAX_PAGE = 1000
MAX_QUERY = 500


def page_asked(request: web.Request) -> int:
    """The page asked for, 1 for anything but a few ASCII digits ('²'.isdigit() is true too)."""
    raw = request.query.get("page", "1")
    return min(max(int(raw), 1), MAX_PAGE) if _DIGITS.fullmatch(raw) else 1


def page_numbers(page: int, pages: int) -> list[int]:
    return list(range(max(1, page - 4), min(pages, page + 4) + 1))


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
    page = min(page_asked(request), pages)
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
    page = min(page_asked(request), pages)
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
        page_numbers=page_numbers(page, pages),
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
        if follower is None and (folder / CRAWL_LOG_NAME).is_file():
            follower = followers.setdefault(handle.name, LogFollower(folder / CRAWL_LOG_NAME))
        statuses.append(await asyncio.to_thread(crawl_status, handle.name, folder, follower))
    return render(
        request,
        "status.html",
        section="status",
        statuses=statuses,
        any_running=any(s.running for s in statuses),
    )
