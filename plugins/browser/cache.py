"""Responses the crawl already holds, kept in memory to answer a page's requests for them.

A rendered page asks again for the script, stylesheet and images its neighbours used;
the crawl fetched them once and must not fetch them twice, so the browser is answered
from here.  Bounded in bytes, least recently used first out.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from archiver.api import Headers, canonical_key


@dataclass(frozen=True, slots=True)
class Answer:
    """What the browser is told for one URL: a response, decoded, as a server would send it."""

    url: str
    status: int
    headers: Headers
    body: bytes


class ResponseCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._items: collections.OrderedDict[str, Answer] = collections.OrderedDict()

    def get(self, url: str) -> Answer | None:
        key = canonical_key(url)
        answer = self._items.get(key)
        if answer is not None:
            self._items.move_to_end(key)
        return answer

    def put(self, answer: Answer) -> None:
        cost = len(answer.body) + 200
        if cost > self.max_bytes // 4:
            return
        key = canonical_key(answer.url)
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= len(old.body) + 200
        self._items[key] = answer
        self.size += cost
        while self.size > self.max_bytes and self._items:
            _, dropped = self._items.popitem(last=False)
            self.size -= len(dropped.body) + 200
