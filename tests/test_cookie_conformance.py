"""The crawl's cookie jar on the question RFC 6265 settles for a crawler: which cookie goes to
which host.

Each case is a response of ``home.example.org`` that sets cookies and redirects, and the
``Cookie`` header the next request must carry (None: no cookie), as the test server of the
RFC 6265 parser suite (abarth/http-state) works.  The cases are our own, written for the rules
of RFC 6265 sections 5.1.3 (domain matching), 5.1.4 (paths), 5.2.3 (the Domain attribute),
5.3 step 5 (public suffixes) and 5.4 (which cookies a request carries).  They run through the
fetcher's own jar (`new_cookie_jar`) and aiohttp's client, against a forward proxy on
loopback that answers for every host name and records what each request carried; each case
gets a fresh jar.  What aiohttp still does otherwise than the RFC on other points (the order of
a request's cookies, one cookie per name, names it refuses, ``Secure qux``) is in
docs/login.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from yarl import URL

from archiver.fetcher import new_cookie_jar

pytestmark = pytest.mark.timeout(60)

START = "http://home.example.org:8888/cookie-parser?{name}"
RESULT = "cookie-parser-result?{name}"


def case(set_cookies: list[str], expected: str | None, host: str = "home.example.org") -> dict[str, Any]:
    """A response setting `set_cookies` and sending the client on to `host`'s result page."""
    headers = [["Set-Cookie", value] for value in set_cookies]
    return {"headers": [*headers, ["Location", f"http://{host}:8888/" + RESULT]], "expected": expected}


CASES: dict[str, dict[str, Any]] = {
    "host-only": case(["foo=bar"], "foo=bar"),
    "host-only-not-to-a-subdomain": case(["foo=bar"], None, "www.home.example.org"),
    "host-only-not-to-the-parent": case(["foo=bar"], None, "example.org"),
    "domain-itself": case(["foo=bar; Domain=home.example.org"], "foo=bar"),
    "domain-to-a-subdomain": case(["foo=bar; Domain=home.example.org"], "foo=bar", "www.home.example.org"),
    "domain-leading-dot": case(["foo=bar; Domain=.home.example.org"], "foo=bar"),
    "domain-of-the-parent-to-a-sibling": case(
        ["foo=bar; Domain=example.org"], "foo=bar", "sibling.example.org"
    ),
    "domain-of-the-parent-to-the-parent": case(["foo=bar; Domain=example.org"], "foo=bar", "example.org"),
    "domain-in-capitals": case(["foo=bar; Domain=HOME.Example.ORG"], "foo=bar"),
    "domain-not-above-the-host": case(["foo=bar; Domain=sibling.example.org"], None, "sibling.example.org"),
    "domain-not-above-the-host-back-home": case(["foo=bar; Domain=sibling.example.org"], None),
    "domain-of-a-child-of-the-host": case(
        ["foo=bar; Domain=www.home.example.org"], None, "www.home.example.org"
    ),
    "domain-a-suffix-but-no-label": case(["foo=bar; Domain=ome.example.org"], None),
    "domain-another-site": case(["foo=bar; Domain=example.com"], None, "example.com"),
    "domain-a-public-suffix": case(["foo=bar; Domain=org"], None, "other.org"),
    "domain-a-public-suffix-with-a-dot": case(["foo=bar; Domain=.org"], None, "sibling.example.org"),
    "domain-a-public-suffix-back-home": case(["foo=bar; Domain=org"], None),
    "domain-empty-is-host-only": case(["foo=bar; Domain="], "foo=bar"),
    "domain-empty-not-to-a-subdomain": case(["foo=bar; Domain="], None, "www.home.example.org"),
    "path-of-the-result": case(["foo=bar; Path=/cookie-parser-result"], "foo=bar"),
    "path-elsewhere": case(["foo=bar; Path=/elsewhere"], None),
    "path-a-prefix-but-no-segment": case(["foo=bar; Path=/cookie-parser-res"], None),
    "secure-not-over-http": case(["foo=bar; Secure"], None),
    "max-age-zero": case(["foo=bar; Max-Age=0"], None),
    "expired": case(["foo=bar; Expires=Wed, 01 Jan 2020 00:00:00 GMT"], None),
    "a-quoted-value-as-sent": case(['foo="bar"'], 'foo="bar"'),
    "two-hosts-each-its-own": case(["a=1", "b=2; Domain=example.org"], "b=2", "sibling.example.org"),
}
"""Case name -> the response's headers and the Cookie header the next request carries."""


class SuiteServer:
    """Answers as the suite's test server does, for any host; records each request's Cookie."""

    def __init__(self) -> None:
        self.cookies: dict[str, str | None] = {}
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("utf-8", "surrogateescape").split("\r\n")
            target = URL(head[0].split(" ")[1])
            cookie = next(
                (line.split(":", 1)[1].strip() for line in head[1:] if line.lower().startswith("cookie:")),
                None,
            )
            name = target.query_string
            if target.path == "/cookie-parser":
                lines = [f"{key}: {value.replace('{name}', name)}" for key, value in CASES[name]["headers"]]
                if not any(key.lower() == "location" for key, _ in CASES[name]["headers"]):
                    lines.append("Location: /" + RESULT.format(name=name))
                answer = "HTTP/1.1 302 Found\r\n" + "".join(line + "\r\n" for line in lines)
            else:
                self.cookies[name] = cookie
                answer = "HTTP/1.1 200 OK\r\n"
            raw = (answer + "Content-Length: 0\r\nConnection: close\r\n\r\n").encode(
                "utf-8", "surrogateescape"
            )
            writer.write(raw)
            await writer.drain()
        finally:
            writer.close()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)


@pytest.fixture
async def suite_server() -> AsyncIterator[SuiteServer]:
    server = SuiteServer()
    await server.start()
    yield server
    assert server.server is not None
    server.server.close()
    await server.server.wait_closed()


async def cookie_sent(server: SuiteServer, name: str) -> str | None:
    """The Cookie header the request after the case's response carried, through the crawl's jar."""
    async with aiohttp.ClientSession(cookie_jar=new_cookie_jar()) as session:
        url = URL(START.format(name=name))
        async with session.get(url, proxy=server.url, allow_redirects=False) as response:
            location = response.headers["Location"]
        async with session.get(url.join(URL(location)), proxy=server.url, allow_redirects=False):
            pass
    return server.cookies.get(name)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_cookie_goes_to_the_hosts_it_was_set_for(suite_server: SuiteServer, name: str) -> None:
    assert await cookie_sent(suite_server, name) == CASES[name]["expected"]
