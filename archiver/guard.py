"""The address guard: keeps a crawl that started on the public web out of private networks.

A page or a redirect can point at `http://169.254.169.254/` (a cloud metadata service),
at `10.0.0.1` or at a name that resolves there (`0xa9fea9fe`, or a DNS record made for
the purpose), and a crawler run as a service would fetch it for whoever submitted the
root.  So the check is made on the *resolved* address, inside the connector's resolver,
before any connection is opened: a host whose every address is refused is never
contacted.  Literal IP addresses never reach the resolver (aiohttp connects to them
directly), so the crawler checks those when the URL is found.  The resolver itself is
`fetcher.GuardedResolver`, since only the fetcher speaks to aiohttp.

The rule: a root may be anywhere; any other URL may only reach the classes of address
the roots themselves are in (public addresses are always fine).  A crawl of
`http://127.0.0.1:8080/` may follow links to other loopback ports; a crawl of a public
site may not reach loopback, private or link-local space.  `allow_private_redirects`
lifts the rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from .urls import Address, clean_url, literal_address

Resolve = Callable[[str], Awaitable[list[str]]]

PUBLIC = "public"
LOOPBACK = "loopback"
PRIVATE = "private"
LINK_LOCAL = "link-local"
SPECIAL = "special-purpose"

_CGNAT = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(OSError):
    """A host resolved only to addresses this crawl may not reach."""


def address_class(address: Address) -> str:
    """Which kind of network `address` belongs to, for the guard's rule."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return LOOPBACK
    if address.is_link_local:
        return LINK_LOCAL
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return SPECIAL
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return PRIVATE
    if address.is_private:
        return PRIVATE if not address.is_global else PUBLIC
    return PUBLIC


class AddressGuard:
    """Decides which resolved addresses a crawl may connect to; see the module docstring."""

    def __init__(self, roots: Iterable[str], *, allow_all: bool = False) -> None:
        self.allow_all = allow_all
        self.root_hosts: set[str] = set()
        self.allowed_classes: set[str] = {PUBLIC}
        for root in roots:
            host = (urlsplit(clean_url(root) or "").hostname or "").rstrip(".")
            if not host:
                continue
            self.root_hosts.add(host)
            address = literal_address(host)
            if address is not None:
                self.allowed_classes.add(address_class(address))

    async def learn_roots(self, resolve: Resolve) -> None:
        """Resolve the roots' host names once, so their address classes are allowed too.

        Bounded in time, so a dead DNS server cannot hold the start of the crawl.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(15):
                for host in self.root_hosts:
                    if literal_address(host) is None:
                        await self._learn(host, resolve)

    async def _learn(self, host: str, resolve: Resolve) -> None:
        try:
            addresses = await resolve(host)
        except OSError:
            return
        for text in addresses:
            address = literal_address(text)
            if address is not None:
                self.allowed_classes.add(address_class(address))

    def refusal(self, host: str, address: Address) -> str | None:
        """Why `host` may not be reached at `address`, or None."""
        if self.allow_all or host.lower().rstrip(".") in self.root_hosts:
            return None
        kind = _address_class(address)
        if kind in self.allowed_classes:
            return None
        return (
            f"{address} is a {kind} address and the crawl's roots are not"
            " (allow_private_redirects = true allows it)"
        )

    def address_refusal(self, host: str, text: str) -> str | None:
        """`refusal` for an address given as text (what a resolver returns)."""
        address = literal_address(text)
        return None if address is None else self.refusal(host, address)

    def url_refusal(self, url: str) -> str | None:
        """The refusal for a URL whose host is a literal IP address; None for names (checked later)."""
        host = (urlsplit(url).hostname or "").lower()
        address = _literal_address(host)
        if address is None:
            return None
        return self.refusal(host, address)


@functools.lru_cache(maxsize=4096)
def _address_class(address: Address) -> str:
    """`address_class`, remembered: `is_private` and its kin test the address against a
    list of networks each time."""
    return address_class(address)


@functools.lru_cache(maxsize=4096)
def _literal_address(host: str) -> Address | None:
    """`literal_address`, remembered: every link found is checked, and parsing the host
    cost more than the rest of the queue's rules together."""
    return literal_address(host)
