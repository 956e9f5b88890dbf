"""The reference of the browser benchmarks: the plainest Playwright loop over a list of pages.

One headless Chromium (the same executable archiver drives), one browser context, `--tabs`
pages each taking the next URL in turn: `page.goto` until the network is idle (Playwright's
own "networkidle": no request for 500 ms), then the DOM (`page.content()`).  Nothing is
intercepted, scrolled, screenshotted or stored: what Chromium itself costs on this machine, the
pace `--browser` capture and `archiver qa` are measured against.  Prints one JSON object.

    python -m bench.playwright_loop URLS_FILE --tabs 2      # one URL a line
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import time
from pathlib import Path


async def load_all(
    urls: list[str], tabs: int, executable: str, page_seconds: float
) -> dict[str, float | int]:
    from playwright.async_api import async_playwright

    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    loaded = failed = dom_chars = 0

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        started = time.perf_counter()

        async def tab() -> None:
            nonlocal loaded, failed, dom_chars
            page = await context.new_page()
            while not queue.empty():
                url = queue.get_nowait()
                try:
                    await page.goto(url, wait_until="networkidle", timeout=page_seconds * 1000)
                    dom_chars += len(await page.content())
                    loaded += 1
                except Exception:  # a page that fails counts as not loaded, the loop goes on
                    failed += 1
            await page.close()

        await asyncio.gather(*(tab() for _ in range(tabs)))
        seconds = time.perf_counter() - started
        await browser.close()
    return {"pages": loaded, "failed": failed, "seconds": seconds, "dom_chars": dom_chars}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("urls", type=Path, help="a file of URLs, one a line")
    parser.add_argument("--tabs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per page")
    parser.add_argument("--executable", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    urls = [line.strip() for line in args.urls.read_text().splitlines() if line.strip()]
    print(json.dumps(asyncio.run(load_all(urls, args.tabs, args.executable, args.timeout))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
