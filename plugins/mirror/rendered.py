"""Which pages of a `--browser` crawl the export writes as rendered, and from which record."""

from __future__ import annotations

from ..archive_reader.reader import Capture, WarcArchive
from ..markup.snapshot import DOM_PREFIX

__all__ = ["rendered_dom"]


def rendered_dom(warcs: WarcArchive, capture: Capture) -> Capture | None:
    """The ``urn:dom:`` record the browser capture stored for this capture of a page, if any.

    The browser renders a page after its response is stored, so its DOM is the first one at
    or after the capture, and before the page's next capture (a DOM of a later crawl
    belongs to that crawl's capture).
    """
    doms = [dom for dom in warcs.captures(DOM_PREFIX + capture.url) if dom.timestamp >= capture.timestamp]
    if not doms:
        return None
    dom = min(doms, key=lambda found: found.timestamp)
    later = [c.timestamp for c in warcs.captures(capture.url) if c.timestamp > capture.timestamp]
    if later and dom.timestamp > min(later):
        return None
    return dom
