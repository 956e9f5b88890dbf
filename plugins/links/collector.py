"""Gathers one document's links: resolved, deduplicated, and capped in number."""

from __future__ import annotations

from archiver.api import Link, LinkKind

from .resolve import Resolver


class LinkCollector:
    """Accumulates `Link` records in document order for one page.

    `limit` is the most links kept (0: no limit).  Once it is reached, `overflow` turns
    true at the next new reference, so extractors stop walking the document: a page with
    a million links costs no more than one with `limit`.
    """

    __slots__ = ("_seen", "limit", "links", "max_url_length", "overflow", "resolver")

    def __init__(self, resolver: Resolver, *, limit: int = 0, max_url_length: int = 0) -> None:
        self.resolver = resolver
        self.limit = limit
        self.max_url_length = max_url_length
        self.links: list[Link] = []
        self.overflow = False
        self._seen: set[tuple[str, LinkKind]] = set()

    def add(self, raw: str, kind: LinkKind) -> None:
        url = self.resolver.resolve(raw)
        if url is None:
            return
        key = (url, kind)
        if key in self._seen:
            return
        if self.limit and len(self.links) >= self.limit:
            self.overflow = True
            return
        self._seen.add(key)
        self.links.append(Link(url, kind))

    def rebase(self, href: str) -> None:
        """Apply a `<base href>`: later (and, as browsers do, earlier) references use it.

        A base that is not an http(s) URL, or longer than `max_url_length`, is ignored: a
        100 KB base would otherwise turn each short relative link into a 100 KB URL.
        """
        url = self.resolver.resolve(href)
        if url is None or (self.max_url_length and len(url) > self.max_url_length):
            return
        resolver = Resolver.for_url(url)
        if resolver is not None:
            self.resolver = resolver
