"""DIR/index.html: the page a user opens first, listing each archived site and its start page."""

from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = ["SiteEntry", "landing_page"]


@dataclass(frozen=True, slots=True)
class SiteEntry:
    host: str
    files: int
    start_href: str | None
    start_url: str | None


_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem}"
    "li{margin:.3rem 0}.n{color:#666}"
)


def landing_page(
    title: str, sites: list[SiteEntry], *, captured: str, missing_links: int, report_href: str | None
) -> bytes:
    rows = []
    for site in sites:
        host = html.escape(site.host)
        count = f'<span class="n">({site.files} file{"s" if site.files != 1 else ""})</span>'
        if site.start_href is not None:
            link = html.escape(site.start_href, quote=True)
            shown = html.escape(site.start_url or site.host)
            rows.append(f'<li><a href="{link}">{shown}</a> {count}</li>')
        else:
            rows.append(f"<li>{host} {count}</li>")
    notes = []
    if missing_links and report_href:
        notes.append(
            f"<p>{missing_links} link{'s' if missing_links != 1 else ''} still point at the web: "
            f'see <a href="{html.escape(report_href, quote=True)}">the export report</a>.</p>'
        )
    body = "\n".join(rows)
    heading = html.escape(title)
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">\n'
        f"<title>{heading}</title>\n<style>{_STYLE}</style></head>\n"
        f'<body><h1>{heading}</h1>\n<p class="n">Offline copy, captured {html.escape(captured)}.</p>\n'
        f"<ul>\n{body}\n</ul>\n{''.join(notes)}\n</body></html>\n"
    ).encode()
