"""The per-page work no crawler can skip, timed on the generated pages themselves.

- links: parse a page with selectolax (Lexbor), select every link-bearing element, resolve each
  value against the page URL and drop the fragment (`urljoin` + `urldefrag`);
- gzip: compress one WARC response record (WARC headers + HTTP headers + body) at the level
  warcio uses (9), as a `.warc.gz` member (and at zlib's default, 6, for comparison).

Each is timed over a sample of pages, best of three rounds, in this process (one core).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from selectolax.lexbor import LexborHTMLParser

from .floor import LINK_SELECTOR

WARCIO_GZIP_LEVEL = 9


def _best_of(rounds: int, work: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def sample_pages(docroot: Path, count: int = 200) -> list[tuple[str, bytes]]:
    """Up to `count` HTML files spread over the site, with the URL path each is served at."""
    files = sorted(docroot.rglob("*.html"))
    step = max(1, len(files) // count)
    chosen = files[::step][:count]
    return [("/" + str(f.relative_to(docroot)), f.read_bytes()) for f in chosen]


def measure(docroot: Path, base_url: str = "http://127.0.0.1:8080") -> dict[str, float]:
    """Microseconds per page for each step, and the pages/s one core could do of each."""
    pages = sample_pages(docroot)
    texts = [(base_url + path, body.decode("utf-8")) for path, body in pages]
    values: list[tuple[str, list[str]]] = []
    for url, text in texts:
        nodes = LexborHTMLParser(text).css(LINK_SELECTOR)
        found = [n.attributes.get("href") or n.attributes.get("src") or "" for n in nodes]
        values.append((url, found))

    def decode() -> None:
        for _, body in pages:
            body.decode("utf-8")

    def parse_and_read() -> None:
        for _, text in texts:
            for node in LexborHTMLParser(text).css(LINK_SELECTOR):
                attributes = node.attributes
                attributes.get("href") or attributes.get("src")

    def resolve() -> None:
        for url, found in values:
            for value in found:
                urldefrag(urljoin(url, value))

    records = []
    for path, body in pages:
        http = (
            f"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
        ).encode()
        warc = (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {base_url}{path}\r\n"
            "WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:0>\r\n"
            f"Content-Type: application/http;msgtype=response\r\n"
            f"Content-Length: {len(http) + len(body)}\r\n\r\n"
        ).encode()
        records.append(warc + http + body + b"\r\n\r\n")

    def gzip(level: int) -> Callable[[], None]:
        def work() -> None:
            for record in records:
                compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS + 16)
                compressor.compress(record)
                compressor.flush()

        return work

    n = len(pages)
    seconds = {
        "decode_us": _best_of(3, decode),
        "parse_and_read_us": _best_of(3, parse_and_read),
        "urljoin_us": _best_of(3, resolve),
        "gzip_us": _best_of(3, gzip(WARCIO_GZIP_LEVEL)),
        "gzip6_us": _best_of(3, gzip(6)),
    }
    result = {key: value / n * 1e6 for key, value in seconds.items()}
    result["links_us"] = result["decode_us"] + result["parse_and_read_us"] + result["urljoin_us"]
    result["links_per_page"] = sum(len(v) for _, v in values) / n
    result["page_kb"] = sum(len(b) for _, b in pages) / n / 1024
    result["links_pages_per_s"] = 1e6 / result["links_us"]
    result["gzip_pages_per_s"] = 1e6 / result["gzip_us"]
    result["sample_pages"] = n
    return result
