"""``crawl --update``: a page fetched again, compared with the copy the archive holds.

The request was conditional (`fetcher.default_headers` and the plugins add the stored
validators); a `304` is believed only when a validator was sent and a capture is stored,
and the crawl then goes on through the stored page (its links).  An answer in full whose
content the archive already holds is marked `unchanged`, so plugins may store a revisit.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .errors import FetchError
from .fetcher import VALIDATORS, stored_page
from .frontier import Item
from .model import Crawl, Page, find_header

if TYPE_CHECKING:
    from .manager import Hooks

log = logging.getLogger(__name__)


def sent_validator(page: Page) -> bool:
    """Whether the request of `page` was conditional: only then does a 304 mean anything."""
    return any(find_header(page.request_headers, name) for name in VALIDATORS)


async def compare_with_stored(
    page: Page,
    item: Item,
    hooks: Hooks,
    crawl: Crawl,
    refetch: Callable[[], Awaitable[Page]] | None = None,
) -> tuple[Page, Page | None]:
    """`page` marked `unchanged` when the archive already holds its content, and for a 304 the
    stored page the crawl goes on through (its links, made ready for extraction).

    A 304 is believed only when the request carried a validator and a capture is stored:
    otherwise (a server that answers 304 to anything) it is recorded as it came and leads
    nowhere, since inventing its links would archive a site that is not there.  A validator
    is only sent for a stored capture, so a 304 whose capture cannot be read means that copy
    is damaged: the URL is then asked again in full (`refetch`) and the fresh answer stored.
    """
    if page.status != 304:
        if await hooks.same_as_stored(page, crawl):
            return dataclasses.replace(page, unchanged=True), None
        return page, None
    if not sent_validator(page):
        log.warning("%s answered 304 to a request without a validator: recorded as it came", page.url)
        return page, None
    found = await hooks.stored_page(page.url, crawl)
    if found is None and refetch is not None:
        log.warning("%s answered 304 but its stored capture cannot be read: asked again in full", page.url)
        try:
            fresh = await refetch()
        except FetchError as exc:
            log.warning("%s: %s; the 304 is recorded as it came", page.url, exc.message)
        else:
            if fresh.status != 304:
                return await compare_with_stored(fresh, item, hooks, crawl)
    if found is None:
        log.warning("%s answered 304 but no capture of it is stored: recorded as it came", page.url)
        return page, None
    stored = await stored_page(found, item, crawl.config)
    return dataclasses.replace(page, unchanged=True), stored
