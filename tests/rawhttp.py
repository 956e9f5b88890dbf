"""A raw asyncio HTTP/1.1 server on 127.0.0.1 for protocol-level abuse aiohttp's server won't commit.

Routes are coroutines given the connection's writer; they write whatever bytes they like and
return True to keep the connection open for the next request.  Good pages are ordinary
keep-alive responses, so one server can hold the good and the bad pages of one site.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable

Route = Callable[[asyncio.StreamWriter], Awaitable[bool]]


def response_head(status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST instead of a FIN (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class RawSite:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: collections.Counter[str] = collections.Counter()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, fn: Route) -> None:
        self.routes[path] = fn

    def page(self, path: str, html: str, content_type: str = "text/html; charset=utf-8") -> None:
        body = html.encode()

        async def serve(writer: asyncio.StreamWriter) -> bool:
            head = response_head(headers={"Content-Type": content_type, "Content-Length": str(len(body))})
            writer.write(head + body)
            await writer.drain()
            return True

        self.routes[path] = serve

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.hits[path] = self.hits[path] + 1
                route = self.routes.get(path)
                if route is None:
                    writer.write(response_head("404 Not Found", {"Content-Length": "0"}))
                    await writer.drain()
                    continue
                if not await route(writer):
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._tasks.discard(task)
            writer.transport.abort()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()
