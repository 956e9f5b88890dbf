"""A server that writes bytes nobody asked for on a kept-alive connection.

After a 204, a 304, or a response whose body is longer than its Content-Length, the server
writes a whole second response 0.3 s later, in a write of its own.  A client that puts the
connection back in its pool reads that injected response as the answer to its next request
on the connection: every capture must hold the answer to its own request instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main

PAGES = 20
LATE = 0.3
INJECTED = b"<html>INJECTED <a href='/evil'>evil</a></html>"


def injected_response() -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(INJECTED)}\r\n\r\n"
    return head.encode() + INJECTED


def page_body(path: str) -> bytes:
    return f"<html><title>{path}</title><p>page {path}.</p></html>".encode()


class DesyncSite:
    """Pages /p1../p20 whose every second or third answer is followed by an injected response."""

    def __init__(self, pages: int = PAGES) -> None:
        self.pages = pages
        self.port = 0
        self.requests: list[str] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._server.wait_closed()

    def _later(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        async def send() -> None:
            await asyncio.sleep(LATE)
            with contextlib.suppress(ConnectionError, RuntimeError):
                if not writer.is_closing():
                    writer.write(data)

        task = asyncio.ensure_future(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
                }
                self.requests.append(path)
                writer.write(self._answer(path, headers.get("if-none-match"), writer))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _answer(self, path: str, if_none_match: str | None, writer: asyncio.StreamWriter) -> bytes:
        if path == "/":
            links = "".join(f'<a href="/p{n}">p{n}</a>' for n in range(1, self.pages + 1))
            body = f"<html>{links}</html>".encode()
            return (
                ok(body, etag='"root"') if if_none_match != '"root"' else b"HTTP/1.1 304 Not Modified\r\n\r\n"
            )
        if not path.startswith("/p"):
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        number = int(path[2:])
        etag = f'"{path[1:]}"'
        if if_none_match == etag:
            self._later(writer, injected_response())
            return f"HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\n\r\n".encode()
        body = page_body(path)
        if number % 3 == 0:
            self._later(writer, injected_response())
            return f"HTTP/1.1 204 No Content\r\nETag: {etag}\r\n\r\n".encode()
        if number % 3 == 1:
            # The body is longer than announced: the rest comes later, with a response after it.
            self._later(writer, b"<p>late tail</p>" + injected_response())
        return ok(body, etag=etag)


def ok(body: bytes, etag: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: {etag}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@pytest.fixture
async def desync() -> AsyncIterator[DesyncSite]:
    site = DesyncSite()
    await site.start()
    yield site
    await site.close()


def captures(archive: Path) -> list[tuple[str, str, int, bytes]]:
    """(URL, record type, status, payload) of every response and revisit of the archive."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "revisit"):
                    continue
                status = int(record.http_headers.get_statuscode()) if record.http_headers else 0
                url = record.rec_headers.get_header("WARC-Target-URI")
                found.append((url, record.rec_type, status, record.content_stream().read()))
    return found


def assert_each_capture_is_its_own(site: DesyncSite, archive: Path) -> None:
    seen = captures(archive)
    assert seen
    for url, kind, status, body in seen:
        assert b"INJECTED" not in body, f"{url} ({kind}) holds another request's answer"
        path = url.removeprefix(site.url(""))
        if path.startswith("/p") and kind == "response" and status == 200:
            assert page_body(path) in body, f"{url} holds {body[:80]!r}"
    assert "/evil" not in site.requests


async def run(*args: str, delay: str = "0.05") -> None:
    assert await asyncio.to_thread(main, [*args, "-q", "--delay", delay, "--disable-plugin", "index"]) == 0


async def test_late_bytes_never_answer_the_next_request(desync: DesyncSite, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await run("crawl", desync.url("/"), "-o", str(archive))
    assert_each_capture_is_its_own(desync, archive)
    assert {f"/p{n}" for n in range(1, PAGES + 1)} <= set(desync.requests)


async def test_late_bytes_after_304_in_an_update(desync: DesyncSite, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await run("crawl", desync.url("/"), "-o", str(archive))
    await asyncio.sleep(1.05)
    desync.requests.clear()
    await run("crawl", "--update", str(archive))
    assert_each_capture_is_its_own(desync, archive)
    assert {f"/p{n}" for n in range(1, PAGES + 1)} <= set(desync.requests)


async def test_late_bytes_at_delay_0_on_a_larger_site(tmp_path: Path) -> None:
    """Issue 42 point 13: at --delay 0 a 40-page site fills the pool past the count where a
    connection not yet quiet was reused anyway, and a 204's late bytes answered another URL."""
    site = DesyncSite(pages=120)
    await site.start()
    try:
        archive = tmp_path / "a"
        await run("crawl", site.url("/"), "-o", str(archive), delay="0")
        assert_each_capture_is_its_own(site, archive)
        assert {f"/p{n}" for n in range(1, 121)} <= set(site.requests)
    finally:
        await site.close()
