"""Screenshots taken through the DevTools protocol: the whole page, or its first screen when it
is too tall, as PNG, the same pixels Playwright's own screenshot has."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from archiver_plugins.browser.loading import VIEWPORT
from archiver_plugins.browser.screenshots import FULL_PAGE_MAX_HEIGHT, page_png
from browser import launch_browser

pytestmark = pytest.mark.timeout(60)


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def tall_page(height: int) -> str:
    return (
        f"<!doctype html><style>body{{margin:0}} div{{height:{height}px;"
        "background:linear-gradient(red,blue)}</style><div></div>"
    )


async def shots(height: int, *, own_session: bool) -> tuple[bytes, bytes]:
    """(page_png's screenshot, Playwright's) of a page `height` pixels tall."""
    browser: Any
    async with launch_browser() as browser:
        context = await browser.new_context(viewport=VIEWPORT)
        page = await context.new_page()
        await page.set_content(tall_page(height))
        cdp = None if own_session else await context.new_cdp_session(page)
        ours = await page_png(page, cdp)
        full = height <= FULL_PAGE_MAX_HEIGHT
        theirs: bytes = await page.screenshot(type="png", full_page=full, animations="disabled")
        await context.close()
    return ours, theirs


@pytest.mark.parametrize("own_session", [True, False])
async def test_a_page_taller_than_the_window_is_shot_whole(own_session: bool) -> None:
    ours, theirs = await shots(2500, own_session=own_session)
    assert png_size(ours) == png_size(theirs) == (VIEWPORT["width"], 2500)


async def test_a_page_taller_than_the_cap_is_shot_first_screen_only() -> None:
    ours, theirs = await shots(FULL_PAGE_MAX_HEIGHT + 1000, own_session=True)
    assert png_size(ours) == png_size(theirs) == (VIEWPORT["width"], VIEWPORT["height"])
