"""The crawl log's line for a URL fetched or failed, and the limits that shaped its capture, in words."""

from __future__ import annotations

from .config import Config
from .crawllog import UrlRecord
from .frontier import Item
from .model import Page
from .politeness import RETRY_STATUSES


def url_record(
    config: Config,
    item: Item,
    page: Page | None,
    tries: int,
    num_urls: int,
    num_new: int,
    error: str | None,
) -> UrlRecord:
    """The crawl-log line of `item`: fetched (`page`) or failed (`error`)."""
    return UrlRecord(
        url=item.url,
        status=page.status if page else None,
        next_url=page.redirect_to if page else None,
        content_type=page.content_type or None if page else None,
        encoding=page.encoding if page else None,
        num_urls=num_urls,
        num_new_urls=num_new,
        tries=tries,
        error=error,
        depth=item.depth,
        bytes=len(page.body) if page else 0,
        elapsed=round(page.elapsed, 4) if page else 0.0,
        kind=str(item.kind),
        truncated=page.truncated if page else None,
        outcome=("not_modified" if page.unchanged and page.status == 304 else "fetched")
        if page
        else "failed",
        reason=limit_reason(page, tries, num_urls, config) if page else None,
    )


def limit_reason(page: Page, tries: int, num_urls: int, config: Config) -> str | None:
    """The limits that shaped this capture, in words, for the crawl log."""
    reasons = []
    if page.truncated == "length":
        reasons.append(f"body cut at max_body_size = {config.max_body_size} bytes")
    elif page.truncated == "time":
        reasons.append(
            f"body cut: over timeout = {config.timeout:g} s or under min_rate = {config.min_rate} B/s"
        )
    elif page.truncated == "disconnect":
        reasons.append(f"connection lost mid-body, partial body kept after {tries} tries")
    if page.decode_error:
        reasons.append(f"not parsed: {page.decode_error}")
    if num_urls >= config.max_links_per_page:
        reasons.append(f"only the first {config.max_links_per_page} links taken (max_links_per_page)")
    if page.status in RETRY_STATUSES:
        reasons.append(f"HTTP {page.status} after {tries} tries (Retry-After honoured)")
    return "; ".join(reasons) or None
