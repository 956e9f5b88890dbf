"""Many small sites at once: N hosts on loopback addresses, P pages each, served by one process.

Host i is `127.0.X.Y` (from 127.0.0.2 on, one address each, so every crawler sees N hosts
and keeps N politeness slots), all on one port.  Page k of a host links to pages
3k+1 .. 3k+3 of the same host and back to its home page, so a breadth-first crawl of the
home page reaches every page; each page also has a shared stylesheet, so requisites are
part of the crawl.  robots.txt allows everything and names no Crawl-delay.

    python -m bench.hosts_site --hosts 20 --pages 100      # prints the port, serves until killed
    python -m bench.hosts_site --hosts 5000 --pages 5 --response-delay 0.05

`--response-delay S` holds every response (robots.txt included) S seconds before it is sent,
as a server across a network would, so a crawl is bound by how many requests it keeps in
flight rather than by its own CPU.  `SERVED_PATH` answers how many requests the server
has answered so far (that one not counted, never delayed), so a bench counts what each
crawler asked for: pages, robots.txt and whatever else it probes (a sitemap).  `BUSY_PATH`
answers the request-seconds spent in flight so far, the first arrival since the last such
reading and the last answer (seconds of the server's clock): from two readings a bench has
the average number of requests a crawler kept in flight from its first request to its last.

`expected_urls(hosts, pages, port)` lists every URL a correct crawler fetches.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import socket
import sys
import time
import urllib.request
from dataclasses import dataclass

from aiohttp import web

FIRST = int(ipaddress.IPv4Address("127.0.0.2"))
ROBOTS = "User-agent: *\nAllow: /\n"
STYLE = "body { font-family: serif; margin: 2em; }\n"
FILLER = " ".join(f"word{n}" for n in range(300))
SERVED_PATH = "/__bench/served"
BUSY_PATH = "/__bench/busy"


def host_address(index: int) -> str:
    return str(ipaddress.IPv4Address(FIRST + index))


def root_urls(hosts: int, port: int) -> list[str]:
    return [f"http://{host_address(i)}:{port}/" for i in range(hosts)]


def page_path(k: int) -> str:
    return "/" if k == 0 else f"/p/{k}.html"


def expected_urls(hosts: int, pages: int, port: int) -> set[str]:
    """Every URL of the sites (robots.txt not included)."""
    urls = set()
    for i in range(hosts):
        base = f"http://{host_address(i)}:{port}"
        urls.update(base + page_path(k) for k in range(pages))
        urls.add(base + "/style.css")
    return urls


def page(k: int, pages: int) -> str:
    links = "".join(
        f'<li><a href="{page_path(c)}">page {c}</a></li>' for c in range(3 * k + 1, 3 * k + 4) if c < pages
    )
    return (
        f"<!doctype html><html><head><title>Page {k}</title>"
        '<link rel="stylesheet" href="/style.css"></head>'
        f'<body><h1>Page {k}</h1><p>{FILLER}</p><ul>{links}</ul><a href="/">home</a></body></html>'
    )


@dataclass
class Busy:
    """Requests in flight, integrated over time: request-seconds, and when the last one ended."""

    in_flight: int = 0
    request_seconds: float = 0.0
    since: float = 0.0
    """When `in_flight` last changed."""
    first_start: float | None = None
    """The first arrival since the last reading."""
    last_end: float = 0.0

    def change(self, by: int) -> None:
        now = time.monotonic()
        self.request_seconds += self.in_flight * (now - self.since)
        self.since = now
        self.in_flight += by
        if by > 0 and self.first_start is None:
            self.first_start = now
        if by < 0:
            self.last_end = now

    def reading(self) -> str:
        self.change(0)
        first, self.first_start = self.first_start, None
        return f"{self.request_seconds:.6f} {first or 0.0:.6f} {self.last_end:.6f}"


def make_app(pages: int, response_delay: float = 0.0) -> web.Application:
    served = 0
    busy = Busy()

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal served
        path = request.path
        if path == SERVED_PATH:
            return web.Response(text=str(served), content_type="text/plain")
        if path == BUSY_PATH:
            return web.Response(text=busy.reading(), content_type="text/plain")
        served += 1
        busy.change(+1)
        try:
            return await answer(path)
        finally:
            busy.change(-1)

    async def answer(path: str) -> web.StreamResponse:
        if response_delay:
            await asyncio.sleep(response_delay)
        if path == "/robots.txt":
            return web.Response(text=ROBOTS, content_type="text/plain")
        if path == "/style.css":
            return web.Response(text=STYLE, content_type="text/css")
        if path == "/":
            return web.Response(text=page(0, pages), content_type="text/html")
        if path.startswith("/p/") and path.endswith(".html"):
            number = path[3:-5]
            if number.isdigit() and 0 < int(number) < pages:
                return web.Response(text=page(int(number), pages), content_type="text/html")
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


def served(port: int) -> int:
    """How many requests the server on `port` has answered."""
    url = f"http://{host_address(0)}:{port}{SERVED_PATH}"
    with urllib.request.urlopen(url, timeout=10) as response:
        return int(response.read())


def busy(port: int) -> tuple[float, float, float]:
    """From the server on `port`: request-seconds in flight so far, the first arrival since the
    last call (0 if none) and the last answer, in seconds of the server's clock."""
    url = f"http://{host_address(0)}:{port}{BUSY_PATH}"
    with urllib.request.urlopen(url, timeout=10) as response:
        seconds, first, last = (float(n) for n in response.read().split())
    return seconds, first, last


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


async def serve(hosts: int, pages: int, port: int, response_delay: float = 0.0) -> None:
    runner = web.AppRunner(make_app(pages, response_delay), access_log=None)
    await runner.setup()
    for i in range(hosts):
        await web.TCPSite(runner, host_address(i), port, backlog=1024).start()
    print(port, flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--response-delay", type=float, default=0.0, metavar="S", help="seconds before each response"
    )
    args = parser.parse_args(argv)
    port = args.port or free_port(host_address(0))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.hosts, args.pages, port, args.response_delay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
