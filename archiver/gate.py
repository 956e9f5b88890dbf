"""The last check before a request reaches the network: a paused crawl or host sends nothing new.

`archiver control pause` (and `host HOST pause`, and `stop`) holds from the moment it is
acknowledged.  A worker may have taken a URL and be anywhere short of the network: waiting
for a turn, a slot, its host's gap, robots.txt, DNS or a connection.  Only the connection
pool knows the last moment before a request's first byte is written, so the check runs
there: `fetcher` calls `Ticket.send` once the connection is in hand, and aiohttp writes
the request line and headers without yielding to the loop in between.  A request stopped
there raises `RequestHeld` and its URL goes back to its host's queue.

The gate also counts the requests that passed it and have not finished: what a pause lets
finish, which the acknowledgement reports.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .urls import site_of


class RequestHeld(Exception):
    """The request was stopped before it reached the network: the crawl or its host is paused."""


class Ticket:
    """One request going through the gate; `send` is called when its connection is in hand."""

    __slots__ = ("gate", "sent", "site")

    def __init__(self, gate: RequestGate, site: str) -> None:
        self.gate = gate
        self.site = site
        self.sent = False

    def send(self) -> None:
        """Pass the gate now, or raise `RequestHeld`: nothing of the request was written yet."""
        gate = self.gate
        if gate.closed or gate.holds(self.site):
            raise RequestHeld(self.site)
        self.sent = True
        gate.on_wire[self.site] += 1


_ticket: ContextVar[Ticket | None] = ContextVar("archiver_request_ticket", default=None)


def current_ticket() -> Ticket | None:
    """The ticket of the request the running task is making, if it goes through a gate."""
    return _ticket.get()


class RequestGate:
    """Open while the crawl runs; closed by a pause or a stop; `holds` a host paused on its own."""

    def __init__(self, holds: Callable[[str], bool] = lambda site: False) -> None:
        self.closed = False
        self.holds = holds
        """Whether a host is paused by `archiver control host HOST pause`."""
        self.on_wire: collections.Counter[str] = collections.Counter()
        """Requests sent and not finished, by host."""

    def requests_on_wire(self, site: str | None = None) -> int:
        """Requests already sent and not finished: to every host, or to `site`."""
        if site is None:
            return sum(self.on_wire.values())
        return self.on_wire[site]

    @contextmanager
    def request(self, url: str) -> Iterator[Ticket]:
        """Around one request to `url`: the connection pool checks its ticket before it is sent."""
        ticket = Ticket(self, site_of(url))
        token = _ticket.set(ticket)
        try:
            yield ticket
        finally:
            _ticket.reset(token)
            if ticket.sent:
                left = self.on_wire[ticket.site] - 1
                if left > 0:
                    self.on_wire[ticket.site] = left
                else:
                    del self.on_wire[ticket.site]


def on_wire_phrase(count: int) -> str:
    """'3 requests already sent finish', as an acknowledgement says it."""
    if count == 0:
        return "no request was on the wire"
    noun = "request" if count == 1 else "requests"
    verb = "finishes" if count == 1 else "finish"
    return f"{count} {noun} already sent {verb}"
