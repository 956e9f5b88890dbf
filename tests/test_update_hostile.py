"""``crawl --update`` against validators and stored records that cannot be taken as they are.

A raw server on 127.0.0.1 sends what aiohttp's server would not: validators with control
characters or UTF-8 bytes, a 304 with a body in the same write.  Each URL must end the update
fetched (in full, or confirmed), never failed, and a damaged stored copy is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main

Answer = Callable[[str, dict[bytes, bytes]], bytes]


class ValidatorSite:
    """Answers by path; records the raw request headers of every request."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.port = 0
        self.seen: list[tuple[str, dict[bytes, bytes]]] = []
        self._server: asyncio.Server | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                path = lines[0].split(b" ")[1].decode("latin-1")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                self.seen.append((path, headers))
                writer.write(self.answer(path, headers))
                await writer.drain()
        writer.close()

    def asked(self, path: str) -> list[dict[bytes, bytes]]:
        return [headers for seen, headers in self.seen if seen == path]


def ok(body: bytes, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + b"".join(h + b"\r\n" for h in headers)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


CONTROL_ETAG = b'ETag: "a\x01b"'
CONTROL_DATE = b"Last-Modified: Mon, 01 Jan 2024\x1b 00:00:00 GMT"
BIG_BODY = b"<html>" + os.urandom(40_000).hex().encode() + b"</html>"
"""Larger than the first read of a record, so that its headers read while its payload fails its check."""
UTF8_ETAG = '"\u00e9t\u00e9-\u2603"'.encode()
PAGES = (b"control", b"body304", b"utf8", b"damaged", b"damaged304")
LINKS = b"".join(b'<a href="/%s">x</a>' % name for name in PAGES)


def answer(path: str, headers: dict[bytes, bytes]) -> bytes:
    if path == "/":
        return ok(b"<html>" + LINKS + b"</html>")
    if path == "/control":
        return ok(b"<html>control</html>", CONTROL_ETAG, CONTROL_DATE)
    if path == "/body304":
        if headers.get(b"if-none-match") == b'"b"':
            body = b"<html>a body no 304 may have</html>"
            return b'HTTP/1.1 304 Not Modified\r\nETag: "b"\r\nContent-Length: %d\r\n\r\n' % len(body) + body
        return ok(b"<html>body304</html>", b'ETag: "b"')
    if path == "/utf8":
        if headers.get(b"if-none-match") == UTF8_ETAG:
            return b"HTTP/1.1 304 Not Modified\r\nETag: " + UTF8_ETAG + b"\r\n\r\n"
        return ok(b"<html>utf8</html>", b"ETag: " + UTF8_ETAG)
    if path == "/damaged":
        return ok(b"<html>the damaged page, whole</html>")
    if path == "/damaged304":
        if headers.get(b"if-none-match") == b'"d"':
            return b'HTTP/1.1 304 Not Modified\r\nETag: "d"\r\n\r\n'
        return ok(BIG_BODY, b'ETag: "d"')
    return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"


@pytest.fixture
async def validators() -> AsyncIterator[ValidatorSite]:
    site = ValidatorSite(answer)
    await site.start()
    yield site
    await site.close()


async def run(*args: str) -> int:
    return await asyncio.to_thread(main, [*args, "-q", "--delay", "0", "--disable-plugin", "index"])


def log_outcomes(archive: Path, base: str) -> dict[str, str]:
    """The outcome of each URL in the last crawl's log lines."""
    found: dict[str, str] = {}
    for line in (archive / "crawl-log.jsonl").read_text().splitlines():
        record = json.loads(line)
        found[record["url"].removeprefix(base)] = record.get("outcome", "")
    return found


def records_of(archive: Path, url: str) -> list[tuple[str, str | None, bytes]]:
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle, contextlib.suppress(Exception):
            for record in ArchiveIterator(handle):
                if record.rec_headers.get_header("WARC-Target-URI") == url and record.rec_type in (
                    "response",
                    "revisit",
                ):
                    profile = record.rec_headers.get_header("WARC-Profile")
                    found.append((record.rec_type, profile, record.content_stream().read()))
    return found


def damage(archive: Path, url: str, *, checksum_only: bool = False) -> None:
    """Overwrite the second half of the gzip member holding `url`'s response, or only its CRC
    (its headers then still read, its payload no longer checks)."""
    for index in (archive / "warc").glob("*.cdxj"):
        for line in index.read_text().splitlines():
            if f'"url": "{url}"' not in line:
                continue
            fields = json.loads(line.split(" ", 2)[2])
            warc = archive / "warc" / fields["filename"]
            offset, length = int(fields["offset"]), int(fields["length"])
            data = bytearray(warc.read_bytes())
            start = offset + length - 8 if checksum_only else offset + length // 2
            for at in range(start, offset + length - 4):
                data[at] ^= 0x55
            warc.write_bytes(bytes(data))
            return
    raise AssertionError(f"{url} not in the index")


async def test_update_over_hostile_validators(validators: ValidatorSite, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    assert await run("crawl", validators.url("/"), "-o", str(archive), "--ignore-robots") == 0
    damage(archive, validators.url("/damaged"))
    damage(archive, validators.url("/damaged304"), checksum_only=True)
    await asyncio.sleep(1.05)
    validators.seen.clear()
    assert await run("crawl", "--update", str(archive)) == 0

    outcomes = log_outcomes(archive, validators.url(""))
    for path in ("/control", "/body304", "/damaged"):
        assert outcomes[path] == "fetched", (path, outcomes)
    assert outcomes["/utf8"] == "not_modified"

    control = validators.asked("/control")
    assert control and all(b"if-none-match" not in h and b"if-modified-since" not in h for h in control[-1:])
    assert validators.asked("/utf8")[0][b"if-none-match"] == UTF8_ETAG
    assert [kind for kind, _profile, _body in records_of(archive, validators.url("/utf8"))] == [
        "response",
        "revisit",
    ]
    fresh = records_of(archive, validators.url("/damaged"))[-1]
    assert fresh[0] == "response"
    assert fresh[2] == b"<html>the damaged page, whole</html>"

    # a 304 confirming a copy that cannot be read: asked again in full, stored whole
    asked = validators.asked("/damaged304")
    assert [h.get(b"if-none-match") for h in asked] == [b'"d"', None]
    fresh = records_of(archive, validators.url("/damaged304"))[-1]
    assert fresh[0] == "response"
    assert fresh[2] == BIG_BODY
