"""One URL, one meaning: the host the crawl judges a URL by is the host it connects to.

A few thousand generated authority and path forms (backslashes, user info, IPv4 spellings,
dot segments, upper case, ports) are cleaned as the crawler cleans a link, a redirect target or
a sitemap location, then fetched through the crawl's own fetcher.  Two servers listen on
127.0.0.1 and 127.0.0.2 (one port), the names ``root.test`` and ``other.test`` resolve to
them, and each request says which URL it was: the address it reached must be the address of
the host that scope and the address guard read.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from rawhttp import response_head

from archiver.cli import main
from archiver.errors import FetchError
from archiver.fetcher import default_headers, fetch, open_session
from archiver.frontier import Item
from archiver.testing import make_config
from archiver.urls import clean_url, literal_address, resolve_url, site_of

NAMES = {"root.test": "127.0.0.1", "other.test": "127.0.0.2"}
FORMS = 2500


@dataclass
class Listeners:
    """One port on 127.0.0.1 and on 127.0.0.2; which local address each request reached."""

    port: int = 0
    reached: dict[str, str] = field(default_factory=dict)
    servers: list[asyncio.Server] = field(default_factory=list)

    async def start(self) -> None:
        for _ in range(20):
            first = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            port = first.sockets[0].getsockname()[1]
            try:
                second = await asyncio.start_server(self._serve, "127.0.0.2", port)
            except OSError:
                first.close()
                continue
            self.port, self.servers = port, [first, second]
            return
        raise RuntimeError("no port free on both loopback addresses")

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            local = writer.get_extra_info("sockname")[0]
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode("latin-1")
                marker = target.rpartition("fz=")[2]
                self.reached[marker] = local
                writer.write(
                    response_head(headers={"Content-Length": "2", "Content-Type": "text/plain"}) + b"ok"
                )
                await writer.drain()
        writer.close()


class NamedHosts(AbstractResolver):
    """root.test and other.test to their loopback address; every name asked is noted."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        address = NAMES.get(host)
        if address is None:
            raise OSError(f"unknown host {host!r}")
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self) -> None:
        return None


def generated_forms(port: int, count: int) -> list[str]:
    """Authority and path spellings that parsers have read differently."""
    rng = random.Random(27)
    schemes = ["http://", "HTTP://", "http:/", "http:\\\\", "http:\\/", "Http:///"]
    users = ["", "user@", "u:p@", "other.test\\@", "other.test%5C@", "other.test/@", "@", "a@b@", ":@"]
    hosts = [
        "root.test",
        "ROOT.test",
        "root.test.",
        "other.test",
        "127.0.0.1",
        "127.0.0.2",
        "0x7f.0.0.2",
        "2130706434",
        "127.1",
        "0177.0.0.1",
        "root%2Etest",
        "other.test\\@root.test",
        "root.test\\@other.test",
        "other.test#@root.test",
        "other.test?@root.test",
        "other.test;@root.test",
    ]
    ports = ["", f":{port}", f":0{port}", f":{port}\\"]
    tails = [
        "/",
        "\\",
        "/a/../b",
        "/%2e%2e/x",
        "\\@root.test/",
        "/@other.test/",
        "?q=\\@x",
        "#f@root.test",
        "",
        "/a\\b",
    ]
    forms = []
    for _ in range(count):
        form = (
            rng.choice(schemes)
            + rng.choice(users)
            + rng.choice(hosts)
            + rng.choice(ports)
            + rng.choice(tails)
        )
        forms.append(form if f":{port}" in form or rng.random() < 0.2 else form + f":{port}/")
    return forms


def expected_address(host: str) -> str:
    return host if literal_address(host) is not None else NAMES.get(host, "")


@pytest.fixture
async def listeners() -> AsyncIterator[Listeners]:
    found = Listeners()
    await found.start()
    yield found
    await found.close()


async def test_the_host_judged_is_the_host_connected_to(listeners: Listeners, tmp_path: Path) -> None:
    config = make_config(tmp_path, ["http://root.test/"], timeout=2.0, connect_timeout=1.0, max_tries=1)
    resolver = NamedHosts()
    checked = 0
    mismatches: list[tuple[str, str, str]] = []
    async with open_session(config, resolver) as session:
        for number, form in enumerate(generated_forms(listeners.port, FORMS)):
            # found as a link or sitemap location, and as a redirect Location
            for raw in (form, resolve_url(f"http://root.test:{listeners.port}/start", form)):
                url = clean_url(raw)
                if url is None:
                    continue
                host = urlsplit(url).hostname or ""
                if urlsplit(url).port != listeners.port or not expected_address(host):
                    continue  # nowhere this test listens: judged and refused alike
                marker = f"{number}-{checked}"
                target = url + ("&" if "?" in url else "?") + f"fz={marker}"
                resolver.asked.clear()
                with contextlib.suppress(FetchError):
                    await fetch(session, Item(target), default_headers(config), config)
                checked += 1
                reached = listeners.reached.get(marker)
                judged = site_of(url).rpartition(":")[0]
                if reached != expected_address(judged) or (resolver.asked and resolver.asked != [judged]):
                    mismatches.append((raw, judged, f"{reached} via {resolver.asked}"))
    assert checked > 1000
    assert not mismatches, mismatches[:5]


async def test_a_backslash_redirect_to_another_host_is_out_of_scope(
    listeners: Listeners, tmp_path: Path
) -> None:
    """`http://OTHER\\@ROOT/` in a Location or a sitemap <loc> is a URL of OTHER: never fetched."""
    port = listeners.port
    other = f"http://127.0.0.2:{port}\\@127.0.0.1:{port}/secret"

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                listeners.reached[path] = writer.get_extra_info("sockname")[0]
                if path == "/":
                    body = b'<a href="/moved">m</a>'
                    html = {"Content-Type": "text/html", "Content-Length": str(len(body))}
                    writer.write(response_head(headers=html) + body)
                elif path == "/moved":
                    writer.write(response_head("302 Found", {"Location": other, "Content-Length": "0"}))
                elif path == "/sitemap.xml":
                    loc = other.replace("secret", "listed").encode()
                    body = b"<urlset><url><loc>" + loc + b"</loc></url></urlset>"
                    head_out = {"Content-Type": "application/xml", "Content-Length": str(len(body))}
                    writer.write(response_head(headers=head_out) + body)
                else:
                    writer.write(response_head(headers={"Content-Length": "2"}) + b"ok")
                await writer.drain()
        writer.close()

    for server in listeners.servers:
        server.close()
        await server.wait_closed()
    listeners.servers = [
        await asyncio.start_server(serve, "127.0.0.1", port),
        await asyncio.start_server(serve, "127.0.0.2", port),
    ]
    listeners.reached.clear()
    archive = tmp_path / "a"
    args = ["crawl", f"http://127.0.0.1:{port}/", "-o", str(archive), "-q", "--delay", "0"]
    assert await asyncio.to_thread(main, [*args, "--disable-plugin", "index", "--ignore-robots"]) == 0
    assert listeners.reached.get("/moved") == "127.0.0.1"
    assert "127.0.0.2" not in listeners.reached.values(), listeners.reached
    log = (archive / "crawl-log.jsonl").read_text()
    assert "is not the host of a root" in log, log
