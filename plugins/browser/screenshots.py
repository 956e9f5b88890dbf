"""A page's screenshot as PNG, encoded for speed.

Playwright's ``page.screenshot`` has Chromium encode the PNG at its default compression,
which on a tall page costs more than loading the page did (measured on the bench site:
0.42-0.56 s a page, against 0.20-0.31 s here).  The DevTools protocol's own
``Page.captureScreenshot`` takes ``optimizeForSpeed``: the same pixels in a PNG a third
larger, encoded in half the time.  The browser capture and ``archiver qa`` both take their
screenshots here, so the two they compare are taken the same way.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any

FULL_PAGE_MAX_HEIGHT = 8000
"""Taller pages get a screenshot of the first screen only (a PNG stays a few MB at most)."""
SIZE_SCRIPT = """
() => {
  const root = document.scrollingElement || document.documentElement;
  return [root.scrollWidth, root.scrollHeight];
}
"""


async def page_png(page: Any, cdp: Any = None) -> bytes:
    """The whole page as PNG (its first screen when it is taller than FULL_PAGE_MAX_HEIGHT).

    `cdp`: the page's DevTools session when the caller holds one; otherwise one is opened for
    the screenshot.  A Chromium that refuses the protocol's options gets Playwright's own
    screenshot instead."""
    size = await page.evaluate(SIZE_SCRIPT)
    width, height = size if _is_size(size) else (0, 0)
    full = 0 < height <= FULL_PAGE_MAX_HEIGHT
    params: dict[str, Any] = {"format": "png", "optimizeForSpeed": True}
    if full:
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        params |= {"captureBeyondViewport": True, "clip": clip}
    session = cdp
    try:
        if session is None:
            session = await page.context.new_cdp_session(page)
        shot = await session.send("Page.captureScreenshot", params)
        return base64.b64decode(shot["data"])
    except Exception:
        if page.is_closed():
            raise
        shot_bytes: bytes = await page.screenshot(type="png", full_page=full, animations="disabled")
        return shot_bytes
    finally:
        if cdp is None and session is not None:
            with contextlib.suppress(Exception):
                await session.detach()


def _is_size(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(side, int | float) and side > 0 for side in value)
    )
