"""One HTTP exchange, turned into a `Page`: the only module of the core that imports aiohttp.

aiohttp is told to do as little as possible (no redirects, no decompression) because
the archive must hold what the server sent, and because its own limits do not bound a
crawler: a drip-fed body passes `sock_read`, so the body is read here against a deadline
and a minimum rate.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import os
import resource
import socket
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, cast

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from .config import Config
from .cookiejar import CrawlCookieJar
from .decode import Decoded, choose_encoding, decode_content, is_textual
from .errors import FetchError, exhausted
from .frontier import Item
from .gate import RequestHeld, current_ticket
from .guard import AddressGuard, AddressRefused
from .model import Headers, Page, find_header, parse_content_type
from .tls import certificate_problem, client_context
from .urls import literal_address, resolve_url, wire_url

_READ_CHUNK = 64 * 1024
_THREAD_DECODE_OVER = 512 * 1024

log = logging.getLogger(__name__)


@asynccontextmanager
async def open_session(
    config: Config,
    resolver: AbstractResolver | None = None,
    cookie_jar: aiohttp.abc.AbstractCookieJar | None = None,
) -> AsyncIterator[aiohttp.ClientSession]:
    """One pooled session per crawl, created inside the running loop; no cookies without `cookie_jar`."""
    connector = _PeerRecordingConnector(
        ssl=client_context(config),
        guard=resolver.guard if isinstance(resolver, GuardedResolver) else None,
        proxies=resolver.proxies if isinstance(resolver, GuardedResolver) else frozenset(),
        max_idle=idle_connections_allowed(),
        resolver=resolver,
        limit=max(config.max_tasks, 1),
        limit_per_host=0,
        ttl_dns_cache=None,  # one answer per host for the whole crawl (already filtered by the guard)
        force_close=False,
        keepalive_timeout=KEEPALIVE_SECONDS,
    )
    timeout = aiohttp.ClientTimeout(
        total=None,
        connect=config.connect_timeout,
        sock_connect=config.connect_timeout,
        sock_read=config.first_byte_timeout,
    )
    header_limit = max(config.max_header_size, 1024)
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,
        max_line_size=header_limit,
        max_field_size=header_limit,
        max_headers=256,
        requote_redirect_url=False,
        headers={"User-Agent": config.user_agent},
        cookie_jar=cookie_jar if cookie_jar is not None else aiohttp.DummyCookieJar(),
    ) as session:
        yield session


KEEPALIVE_SECONDS = 120.0
"""How long an idle connection waits for its host's next request (aiohttp's default is 15 s).

Hosts take turns, so in a crawl of thousands of hosts a host's next request comes tens of
seconds after its previous one: with 15 s nearly every request opened a connection of its
own (a round trip, and a TLS handshake, before the request is even sent).  Twisted, under
Scrapy, keeps them 240 s; most servers close theirs sooner (nginx after 75 s), which costs
nothing here: a connection the server closed leaves the pool when its FIN arrives."""

MAX_IDLE_CONNECTIONS = 16_384
"""Idle connections kept at most, whatever the limit on open files (then the oldest is closed)."""


def idle_connections_allowed() -> int:
    """Idle connections the pool may keep: half the open files allowed, after raising the soft limit
    toward the hard one, up to 4 x MAX_IDLE_CONNECTIONS (most systems start processes at 1,024
    and allow far more)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinite = resource.RLIM_INFINITY
    wanted = 4 * MAX_IDLE_CONNECTIONS if hard == infinite else min(hard, 4 * MAX_IDLE_CONNECTIONS)
    if soft != infinite and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return MAX_IDLE_CONNECTIONS if soft == infinite else max(16, min(soft // 2, MAX_IDLE_CONNECTIONS))


def new_cookie_jar() -> aiohttp.CookieJar:
    """A crawl's jar: RFC 6265's rules, no cookie for a public suffix (`cookiejar`), cookies
    of hosts written as IP addresses taken as a browser takes them, values sent as the server
    gave them (never re-quoted)."""
    return CrawlCookieJar(unsafe=True, quote_cookie=False)


class GuardedResolver(AbstractResolver):
    """aiohttp's threaded resolver minus the addresses the `AddressGuard` refuses.

    The refusal happens before any connection is opened.  aiohttp caches what this
    returns per host, and the guard's rule depends on the host only, so the cache cannot
    let a refused address through.
    """

    def __init__(self, guard: AddressGuard, proxies: frozenset[str] = frozenset()) -> None:
        self.guard = guard
        self.proxies = proxies
        """The proxies' hosts: given by the user, reached whatever their address."""
        self._inner = ThreadedResolver()
        self._targets: dict[str, str | None] = {}
        """`check_target`'s verdict per host (the guard's rule depends on the host only)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if host in self.proxies:
            return results
        kept: list[ResolveResult] = []
        refused: list[str] = []
        for result in results:
            reason = self.guard.address_refusal(host, result["host"])
            if reason is None:
                kept.append(result)
            else:
                refused.append(reason)
        if not kept and refused:
            raise AddressRefused(f"{host} resolves to {refused[0]}")
        return kept

    async def check_target(self, url: str) -> None:
        """Apply the guard to a host reached through a proxy, which resolves it instead of us.

        A name that does not resolve here is left to the proxy (an intranet behind it).
        """
        host = URL(url).host or ""
        if not host or literal_address(host) is not None:
            return  # literal addresses are checked when the URL is found
        if host not in self._targets:
            try:
                addresses = await self.addresses(host)
            except OSError:
                addresses = []
            refused = [reason for a in addresses if (reason := self.guard.address_refusal(host, a))]
            if len(self._targets) >= 10_000:
                self._targets.clear()
            self._targets[host] = refused[0] if addresses and len(refused) == len(addresses) else None
        reason = self._targets[host]
        if reason is not None:
            raise FetchError(url, f"address guard: {host} resolves to {reason}", kind="refused")

    async def addresses(self, host: str) -> list[str]:
        """Every address `host` resolves to, unfiltered (to learn the roots' networks)."""
        return [result["host"] for result in await self._inner.resolve(host, 0, socket.AF_UNSPEC)]

    async def close(self) -> None:
        await self._inner.close()


def default_headers(config: Config) -> dict[str, str]:
    return {
        "User-Agent": config.user_agent,
        "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Accept-Encoding": "gzip, deflate, br, zstd",
    }


def _failure_kind(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, AddressRefused):
        return "refused"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "certificate"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return "proxy"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        # wrong or missing credentials fail every request alike; a refusal of one site does not
        return "proxy" if exc.status == 407 else "refused"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "dns"
    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return "disconnect"
    if isinstance(exc, aiohttp.ClientResponseError):
        return "protocol"
    return "network"


def _describe(exc: BaseException, proxy: str | None) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return "timed out"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        refusal = exc.certificate_error
        if isinstance(refusal, ssl.SSLCertVerificationError):
            return certificate_problem(refusal, exc.host)
        return f"TLS certificate of {exc.host} refused: {refusal}"
    shown = str(URL(proxy).with_user(None)) if proxy else "the proxy"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return f"cannot reach the proxy {shown}: {_os_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        # its text would name the proxy's URL, credentials included
        return f"the proxy {shown} refused the tunnel (CONNECT): HTTP {exc.status} {exc.message}".rstrip()
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        return f"TLS handshake failed: {_os_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, AddressRefused):
        return f"address guard: {exc.os_error}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect: {exc.os_error.strerror or exc.os_error}"
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."


def _os_reason(error: OSError) -> str:
    """ "connection refused" rather than asyncio's "Connect call failed ('127.0.0.1', 9)"."""
    if error.errno:
        return os.strerror(error.errno).lower()
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    return str(error.strerror or error)


async def _read_body(
    response: aiohttp.ClientResponse, config: Config, started: float
) -> tuple[bytes, str | None]:
    """The body, de-chunked, stopped at the size cap, the deadline or a too-slow rate."""
    chunks: list[bytes] = []
    size = 0
    deadline = started + config.timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), "time"
        try:
            async with asyncio.timeout(min(remaining, config.first_byte_timeout)):
                chunk = await response.content.readany()
        except TimeoutError:
            if time.monotonic() >= deadline:
                return b"".join(chunks), "time"
            raise
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionError):
            # A body cut by the server is kept (WARC-Truncated: disconnect); the crawler
            # retries it while tries remain.
            if chunks:
                return b"".join(chunks), "disconnect"
            raise
        if not chunk:
            return b"".join(chunks), None
        size += len(chunk)
        if size > config.max_body_size:
            chunks.append(chunk[: len(chunk) - (size - config.max_body_size)])
            return b"".join(chunks), "length"
        chunks.append(chunk)
        elapsed = time.monotonic() - started
        if config.min_rate and elapsed > config.rate_window and size / elapsed < config.min_rate:
            return b"".join(chunks), "time"


_peer: ContextVar[str | None] = ContextVar("archiver_peer", default=None)

QUIET_BEFORE_REUSE = 1.0
"""Seconds a kept-alive connection must stay silent in the pool before it carries another request
(a request finding none that quiet opens a new one; the pool of one host holds twice the crawl's
task count, at least 16: past it the oldest is closed).

HTTP/1.1 cannot tell late bytes of the previous answer from the start of the next one, so a
connection is reused only once the server had time to show it sends nothing unasked."""

_BODILESS_STATUSES = frozenset({204, 304})


class _StrictResponseHandler(ResponseHandler):
    """aiohttp's protocol, made to drop its connection when bytes come that no request asked for.

    aiohttp parses whatever arrives on a pooled connection as the next response and hands it
    to the next request sent there: a server writing after a 204, a 304 or past its
    Content-Length would have its late bytes archived as the answer to another URL.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.idle_since: float | None = None

    def data_received(self, data: bytes) -> None:
        if self.idle_since is not None and data:
            log.debug("bytes nobody asked for on a kept-alive connection: closing it")
            self.force_close()
            if self.transport is not None:
                self.transport.abort()
            return
        super().data_received(data)

    def feed_data(self, data: Any, size: int = 0) -> None:
        message = data[0]
        framed = (
            message.headers.get("Content-Length", "0").strip() != "0"
            or "Transfer-Encoding" in message.headers
        )
        if message.code in _BODILESS_STATUSES and framed:
            # A body announced where HTTP allows none: where this answer ends is a guess.
            self.force_close()
        super().feed_data(data, size)


class _PeerRecordingConnector(aiohttp.TCPConnector):
    """Notes the remote address of each connection handed out (WARC-IP-Address), holds the
    address guard to the addresses actually connected to, and keeps a connection out of use
    while anything unasked may still arrive on it.

    A small response is read and its connection released before the caller sees it, so
    the address is taken here, in the requesting task's context, instead.  IP literals
    never reach the resolver, so the guard sees them here, before the connection is opened,
    and every connection's peer once more after.
    """

    def __init__(
        self,
        *,
        guard: AddressGuard | None = None,
        proxies: frozenset[str] = frozenset(),
        max_idle: int = MAX_IDLE_CONNECTIONS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_idle = max_idle
        self._idle: collections.OrderedDict[ResponseHandler, None] = collections.OrderedDict()
        """Connections released to the pool, oldest first (some since closed by aiohttp or the
        server: they leave this from the front, as the pool's cap pushes them out)."""
        self.guard = guard
        self.proxies = proxies
        """The proxies' hosts, reached whatever their address (the target is checked by
        `GuardedResolver.check_target`)."""
        self._factory = cast(
            "functools.partial[ResponseHandler]", functools.partial(_StrictResponseHandler, loop=self._loop)
        )

    def _release(self, key: Any, protocol: ResponseHandler, *, should_close: bool = False) -> None:
        if isinstance(protocol, _StrictResponseHandler):
            protocol.idle_since = time.monotonic()
        super()._release(key, protocol, should_close=should_close)
        if protocol.is_connected():
            idle = self._idle
            idle[protocol] = None
            while idle:
                oldest = next(iter(idle))
                if oldest.is_connected() and len(idle) <= self.max_idle:
                    break
                del idle[oldest]
                oldest.close()  # aiohttp drops it from the pool when it next looks

    async def _get(self, key: Any, traces: list[Any]) -> Any:
        waiting = self._conns.get(key, ())
        oldest = next((proto for proto, _ in waiting if proto.is_connected()), None)
        idle_since = getattr(oldest, "idle_since", None)
        recent = idle_since is not None and time.monotonic() - idle_since < QUIET_BEFORE_REUSE
        if recent:
            # The oldest open one is not quiet yet: a new connection instead, whatever the
            # delay (a fast host at --delay 0 reused one 0.1 s after a 204 whose late bytes
            # then answered the next URL).  Past twice the crawl's task count (at least 16)
            # that oldest one is closed, so the sockets held stay bounded.  The pool's length
            # counts the few closed ones aiohttp has not dropped yet: counting only open ones
            # cost a check of every pooled connection per request.
            if len(waiting) >= max(2 * self.limit, 16):
                assert oldest is not None
                self._idle.pop(oldest, None)
                oldest.close()  # aiohttp drops it from the pool when it next looks
            return None
        connection = await super()._get(key, traces)
        if connection is not None and connection.protocol is not None:
            self._idle.pop(connection.protocol, None)
            if isinstance(connection.protocol, _StrictResponseHandler):
                connection.protocol.idle_since = None
        return connection

    async def _resolve_host(self, host: str, port: int, traces: Any = None) -> list[ResolveResult]:
        results = await super()._resolve_host(host, port, traces)
        if self.guard is None or host in self.proxies:
            return results
        refusals = [self.guard.address_refusal(host, result["host"]) for result in results]
        kept = [result for result, refused in zip(results, refusals, strict=True) if refused is None]
        if not kept:
            raise AddressRefused(
                f"{host} is {next(r for r in refusals if r)}" if results else f"{host}: no address"
            )
        return kept

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:  # noqa: ASYNC109
        connection = await super().connect(req, traces, timeout)
        transport = connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        refused = None
        if self.guard is not None and address is not None and req.proxy is None:
            refused = self.guard.address_refusal(req.host, address)
        if refused is not None:
            connection.close()
            raise aiohttp.ClientConnectorError(req.connection_key, AddressRefused(refused))
        ticket = current_ticket()
        if ticket is not None:
            try:
                ticket.send()  # the last moment before the request is written (`gate`)
            except RequestHeld:
                connection.release()
                raise
        _peer.set(address)
        return connection


def _decode_headers(raw: tuple[tuple[bytes, bytes], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in raw)


async def fetch(
    session: aiohttp.ClientSession,
    item: Item,
    headers: Mapping[str, str],
    config: Config,
    proxy: str | None = None,
) -> Page:
    """GET `item.url` once, without following redirects; raise FetchError when no response came.

    Through a `proxy`, the page still records the target's URL and the request's own
    headers, not the proxy's address or credentials.  A conditional request (``crawl
    --update``) whose answer cannot be read, such as a 304 carrying a body, is asked again
    without its validators: the URL is then fetched in full instead of failing on every update.
    """
    try:
        return await _fetch_once(session, item, headers, config, proxy)
    except FetchError as exc:
        unconditional = without_validators(headers)
        if exc.kind != "protocol" or len(unconditional) == len(headers):
            raise
        log.warning(
            "%s: the answer to a conditional request is unreadable (%s): asked again in full", item.url, exc
        )
    return await _fetch_once(session, item, unconditional, config, proxy)


async def _fetch_once(
    session: aiohttp.ClientSession,
    item: Item,
    headers: Mapping[str, str],
    config: Config,
    proxy: str | None,
) -> Page:
    target = wire_url(item.url)
    fetched_at = datetime.now(UTC)
    started = time.monotonic()
    _peer.set(None)
    try:
        async with asyncio.timeout(config.timeout + config.connect_timeout):
            async with session.get(
                URL(target, encoded=True),
                headers=dict(headers),
                allow_redirects=False,
                compress=None,
                proxy=proxy,
            ) as response:
                peer = _peer.get()
                body, truncated = await _read_body(response, config, started)
                if truncated:
                    response.close()
                status = response.status
                reason = response.reason or ""
                version = "HTTP/1.1"
                if response.version is not None:
                    version = f"HTTP/{response.version.major}.{response.version.minor}"
                response_headers = _decode_headers(response.raw_headers)
                sent = response.request_info.headers.items()
                request_headers = tuple((k, v) for k, v in sent if k.lower() != "proxy-authorization")
                location = response.headers.get("Location") if 300 <= status < 400 else None
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        if exhausted(exc) is not None:
            raise  # no socket to be had: every URL would fail alike, so the crawl stops (resumable)
        raise FetchError(item.url, _describe(exc, proxy), kind=_failure_kind(exc)) from exc
    elapsed = time.monotonic() - started
    if not any(k.lower() == "host" for k, _ in request_headers):
        request_headers = (("Host", URL(target, encoded=True).raw_host or ""), *request_headers)

    redirect_to = resolve_url(item.url, location) if location is not None else None
    decoded, encoding, source = await _content(body, response_headers, config)
    return Page(
        url=item.url,
        status=status,
        reason=reason,
        http_version=version,
        request_headers=request_headers,
        headers=response_headers,
        body=body,
        content=decoded.content,
        encoding=encoding,
        encoding_source=source,
        fetched_at=fetched_at,
        elapsed=elapsed,
        peer=None if proxy else peer,
        depth=item.depth,
        referrer=item.referrer,
        redirect_to=redirect_to,
        kind=item.kind,
        truncated=truncated,
        decode_error=decoded.error,
        request_target=target if target != item.url else None,
    )


async def _content(body: bytes, headers: Headers, config: Config) -> tuple[Decoded, str | None, str | None]:
    """The body with its Content-Encoding undone, and the charset to read it with (and why).

    Big bodies are decoded off the loop.  Done before the `Page` is built, so that it is
    built once.
    """
    coding = find_header(headers, "content-encoding")
    decode = functools.partial(
        decode_content, body, coding, config.max_decoded_size, config.max_decompression_ratio
    )
    decoded = await asyncio.to_thread(decode) if coding and len(body) > _THREAD_DECODE_OVER else decode()
    content_type, params = parse_content_type(find_header(headers, "content-type"))
    encoding = source = None
    if is_textual(content_type) or not content_type:
        encoding, source = choose_encoding(decoded.content, content_type, params.get("charset"))
    return decoded, encoding, source


VALIDATORS = ("If-None-Match", "If-Modified-Since")
"""The request headers that make a request conditional (``crawl --update``)."""


def without_validators(headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` made unconditional: the answer will be the whole resource."""
    conditional = {name.lower() for name in VALIDATORS}
    return {name: value for name, value in headers.items() if name.lower() not in conditional}


async def stored_page(stored: Page, item: Item, config: Config) -> Page:
    """`stored` (status, headers, body as archived) made whole for link extraction: decoded
    content, charset, redirect target; the crawl item's depth, referrer and kind."""
    page = dataclasses.replace(stored, url=item.url, depth=item.depth, referrer=item.referrer, kind=item.kind)
    decoded, encoding, source = await _content(page.body, page.headers, config)
    location = page.header("Location") if 300 <= page.status < 400 else None
    return dataclasses.replace(
        page,
        content=decoded.content,
        decode_error=decoded.error,
        encoding=encoding,
        encoding_source=source,
        redirect_to=resolve_url(item.url, location) if location is not None else None,
    )
