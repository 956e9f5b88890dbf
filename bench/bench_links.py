"""Micro-benchmark of the bundled link plugin: CPU microseconds per page, on one core.

    python bench/bench_links.py [--pages N]

The page is about 14 KB of HTML with 40 links of every common shape (root-relative,
relative with dot segments and fragments, absolute, protocol-relative, images,
stylesheet, script, inline CSS).  Also times the hostile documents the plugin must survive.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from archiver_plugins import links

from archiver import Crawl, Page
from archiver.config import Config

FILLER = (
    "Lorem ipsum dolor sit amet, <em>consectetur</em> adipiscing elit, sed do eiusmod "
    "tempor incididunt ut labore et dolore magna aliqua. "
)


def sample_page(size: int = 14_000) -> str:
    """About `size` characters of HTML holding exactly 40 links."""
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sample</title>',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="stylesheet" href="/static/site.css">',  # 1
        '<link rel="icon" href="/favicon.ico">',  # 2
        '<link rel="alternate" type="application/rss+xml" href="/feed.xml">',  # 3
        '<script src="/static/app.js" defer></script>',  # 4
        "<style>body{margin:0}.hero{background:url(/img/hero.jpg)}</style>",  # 5
        '</head><body><header><nav><ul class="menu">',
    ]
    parts += [f'<li><a class="nav" href="/section/{i}/">Section {i}</a></li>' for i in range(6)]
    parts.append("</ul></nav></header><main><article>")  # 11 so far
    for i in range(12):  # 24 more: 35
        parts.append(
            f"<p>{FILLER}<a href='../articles/{i}.html#part'>article {i}</a> and "
            f'<a href="https://other.example.org/path/{i}?q={i}&amp;x=1">elsewhere</a></p>'
        )
    for i in range(4):  # 4 more: 39
        parts.append(
            f'<figure><img src="img/{i}.jpg" alt="picture {i}"><figcaption>{FILLER}</figcaption></figure>'
        )
    parts.append('<p><a href="//cdn.example.net/lib.js">cdn</a></p>')  # 40
    parts.append("</article></main><footer><p>")
    body = "".join(parts)
    filler = FILLER.replace("<em>", "").replace("</em>", "")
    while len(body) < size - 30:
        body += filler[: size - 30 - len(body)]
    return body + "</p></footer></body></html>"


def hostile_pages() -> dict[str, str]:
    return {
        "100k links": "<html><body>" + "".join(f'<a href="/p/{i}">{i}</a>' for i in range(100_000)),
        "100k nested divs": "<div>" * 100_000 + '<a href="/deep">x</a>' + "</div>" * 100_000,
        "50k <span></q>": "<span></q>" * 50_000 + '<a href="/x">x</a>',
        "100 KB URL": '<a href="/' + "a" * 100_000 + '">x</a>' * 3,
        "unclosed comment": "<a href=/a>a</a><!--" + '<a href="/b">b</a>' * 50_000,
    }


def make_page(body: str, url: str = "https://example.org/blog/2024/post.html") -> Page:
    return Page(
        url=url,
        status=200,
        headers=(("Content-Type", "text/html; charset=utf-8"),),
        content=body.encode(),
        encoding="utf-8",
    )


def per_call(function: Callable[[], object], repeat: int) -> float:
    """Median CPU microseconds of `function` over 5 rounds of `repeat` calls.

    CPU time of this process, not wall time, so other work on the machine skews it less.
    """
    rounds = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeat):
            function()
        rounds.append((time.process_time() - start) / repeat * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000, help="pages per timing round")
    args = parser.parse_args()
    crawl = Crawl(config=Config(), archive=Path("."), roots=("https://example.org/",))
    body = sample_page()
    page = make_page(body)
    found = links.extract_links(page=page, crawl=crawl) or []
    print(f"sample page: {len(body.encode())} bytes, {len(found)} links")

    def extract() -> object:
        # A fresh Page each call, so decoding the body is part of the cost, as in a crawl.
        return links.extract_links(page=make_page(body), crawl=crawl)

    from selectolax.lexbor import LexborHTMLParser

    total = per_call(extract, args.pages)
    parse = per_call(lambda: LexborHTMLParser(body), args.pages)
    build = per_call(lambda: make_page(body), args.pages)
    print(f"extract_links: {total - build:7.1f} us/page  ({1e6 / (total - build):,.0f} pages/s)")
    print(f"  of which lexbor parse: {parse:7.1f} us")
    for name, hostile in hostile_pages().items():
        start = time.process_time()
        result = links.extract_links(page=make_page(hostile), crawl=crawl) or []
        elapsed = time.process_time() - start
        print(f"{name:>18}: {elapsed * 1000:7.1f} ms, {len(result)} links, {len(hostile):,} chars")


if __name__ == "__main__":
    main()
