"""The crawl's cookie jar against sites that hand out cookies meant for others (issue 42).

The sites are names (``shop.example.com``, ``bank.com``, ``other.co.uk``) that resolve
nowhere: the crawl reaches them through a forward proxy on loopback that answers for every
host itself, as a virtual-host server would, and remembers each request's Cookie header.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from archiver.testing import CrawlFn

pytestmark = pytest.mark.timeout(60)


class VirtualHosts:
    """A forward proxy that is the web: each (host, path) answers what the test declared."""

    def __init__(self) -> None:
        self.pages: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        self.cookies: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
        self.server: TestServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    def page(self, host: str, path: str, body: str, *, set_cookies: tuple[str, ...] = ()) -> None:
        self.pages[(host, path)] = (body, set_cookies)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        key = (request.host, request.path)
        self.cookies[key].append(request.headers.get("Cookie", ""))
        found = self.pages.get(key)
        if found is None:
            return web.Response(status=404, text="not found")
        body, set_cookies = found
        response = web.Response(text=body, content_type="text/html")
        for value in set_cookies:
            response.headers.add("Set-Cookie", value)
        return response

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._serve)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()


@pytest.fixture
async def web_hosts() -> AsyncIterator[VirtualHosts]:
    hosts = VirtualHosts()
    await hosts.start()
    yield hosts
    assert hosts.server is not None
    await hosts.server.close()


async def test_cookies_for_a_public_suffix_reach_no_other_site(
    web_hosts: VirtualHosts, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    """`Domain=com`, `co.uk`, `github.io`, `.org` are refused (aiohttp takes them:
    aio-libs/aiohttp#13653); a cookie for the site's own domain, written in capitals, is kept."""
    web_hosts.page(
        "shop.example.com",
        "/",
        '<a href="/next">next</a><img src="http://bank.com/pixel"><img src="http://other.co.uk/pixel">'
        '<img src="http://user.github.io/pixel"><img src="http://news.org/pixel">',
        set_cookies=(
            "com=1; Domain=com; Path=/",
            "couk=1; Domain=co.uk; Path=/",
            "ghio=1; Domain=github.io; Path=/",
            "org=1; Domain=.org; Path=/",
            "own=1; Domain=EXAMPLE.com; Path=/",
        ),
    )
    web_hosts.page("shop.example.com", "/next", "next")
    for host in ("bank.com", "other.co.uk", "user.github.io", "news.org"):
        web_hosts.page(host, "/pixel", "pixel")
    await crawl_archive("http://shop.example.com/", proxy=web_hosts.url)
    for host in ("bank.com", "other.co.uk", "user.github.io", "news.org"):
        assert web_hosts.cookies[(host, "/pixel")] == [""], (host, web_hosts.cookies)
    assert web_hosts.cookies[("shop.example.com", "/next")] == ["own=1"]


async def test_a_public_suffix_that_is_the_host_itself_keeps_its_cookie_host_only(
    web_hosts: VirtualHosts, crawl_archive: CrawlFn
) -> None:
    """A site at a public suffix (``github.io`` itself) may set Domain=github.io: it is kept
    for that host only, as browsers do, and never sent to ``user.github.io``."""
    web_hosts.page(
        "github.io",
        "/",
        '<a href="/next">next</a><img src="http://user.github.io/pixel">',
        set_cookies=("mine=1; Domain=github.io; Path=/",),
    )
    web_hosts.page("github.io", "/next", "next")
    web_hosts.page("user.github.io", "/pixel", "pixel")
    await crawl_archive("http://github.io/", proxy=web_hosts.url)
    assert web_hosts.cookies[("github.io", "/next")] == ["mine=1"]
    assert web_hosts.cookies[("user.github.io", "/pixel")] == [""]
