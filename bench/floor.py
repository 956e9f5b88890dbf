"""What a bare asyncio client reaches on this machine: the ceiling a Python crawler works under.

Fetches a known URL list (no frontier, no dedup, no storage) with one aiohttp session and N
concurrent tasks, optionally extracting links from each HTML body with selectolax the way a
crawler must. Run in its own process by bench.run so its CPU and RSS are measured alike:

    python -m bench.floor URLS.json --concurrency 100 [--links]

URLS.json is a JSON list of absolute URLs; prints one JSON object (pages, wall_seconds, links).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import aiohttp
from selectolax.lexbor import LexborHTMLParser

LINK_SELECTOR = "a[href], area[href], link[href], img[src], script[src], iframe[src], source[src]"


def extract_links(base: str, html: str) -> list[str]:
    """The unavoidable part of link extraction: parse, select, resolve, drop the fragment."""
    links = []
    for node in LexborHTMLParser(html).css(LINK_SELECTOR):
        attributes = node.attributes
        value = attributes.get("href") or attributes.get("src")
        if value:
            links.append(urldefrag(urljoin(base, value))[0])
    return links


async def fetch_all(urls: list[str], concurrency: int, links: bool) -> tuple[int, int]:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    counts = [0, 0]
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)

    async def worker(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            url = queue.get_nowait()
            async with session.get(url, allow_redirects=False) as response:
                body = await response.read()
            counts[0] += 1
            if links and response.content_type == "text/html":
                counts[1] += len(extract_links(url, body.decode("utf-8", "replace")))

    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return counts[0], counts[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.split("\n")[0])
    parser.add_argument("urls", type=Path, help="JSON list of absolute URLs")
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--links", action="store_true", help="also extract links with selectolax")
    args = parser.parse_args(argv)
    urls = json.loads(args.urls.read_text())
    started = time.perf_counter()
    pages, links = asyncio.run(fetch_all(urls, args.concurrency, args.links))
    wall = time.perf_counter() - started
    print(json.dumps({"pages": pages, "links": links, "wall_seconds": wall}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
