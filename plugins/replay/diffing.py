"""The text of two captures of a page and the difference between them.

Each capture's visible text (`visible_text`: no markup, scripts or hidden elements) is cut into
sentence-sized lines so that `difflib` can line them up.  Cost is bounded at each step:
only the first `MAX_PARSED_BYTES` of a body are decoded and parsed, the text is capped at
`MAX_TEXT_CHARS` and `MAX_LINES`, and the matcher works within `MATCH_BUDGET` (its
worst case is cubic in the lines): past it, a cheaper matcher is tried, then the texts
are lined up only by their common start and end (the page says so).  A revisit has no
body of its own: the one it refers to is read (by payload digest, or for a
server-not-modified revisit by its ``WARC-Refers-To-*`` headers).  Everything here
blocks: the views call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import difflib
import re
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest

from warcio.timeutils import iso_date_to_timestamp

from archiver.api import ArchiveError, Page, choose_encoding, is_textual

from ..archive_reader.members import parse_record
from ..archive_reader.reader import Capture, StoredResponse
from ..markup.text import visible_text
from .library import ArchiveHandle, Found

MAX_TEXT_CHARS = 100_000
"""Visible text compared per capture; the rest is cut (and the page says so)."""
MAX_PARSED_BYTES = 2 * 1024 * 1024
"""Bytes of a body decoded and parsed for its text: far more markup than `MAX_TEXT_CHARS` of
text needs, and a 50 MB page costs no more than this."""
MAX_LINES = 3_000
MATCH_BUDGET = 2.0
"""Seconds of CPU the matcher may take per attempt (its worst case is cubic in the lines)."""
LINE_WIDTH = 160
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class CaptureText:
    """The lines of one capture's visible text, or why there are none."""

    found: Found
    lines: list[str]
    cut: bool = False
    """Only the start of the text is compared (body, text or lines over their cap)."""
    problem: str = ""
    body_from: Capture | None = None
    """For a revisit: the capture whose body was read."""


def text_lines(text: str) -> list[str]:
    """One-line visible text as short lines: one per sentence, long ones wrapped."""
    lines: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        lines.extend(textwrap.wrap(sentence, LINE_WIDTH, break_long_words=True) or [""])
    return [line for line in lines if line]


def _refers_to(handle: ArchiveHandle, capture: Capture) -> Capture | None:
    """The capture a revisit record names in ``WARC-Refers-To-Target-URI`` and ``-Date``."""
    reader = handle.reader()
    if reader is None:
        return None
    path, member = reader.read_member_of(capture)
    if member.problem:
        return None
    headers = parse_record(member, path).rec_headers
    url = headers.get_header("WARC-Refers-To-Target-URI") or capture.url
    date = headers.get_header("WARC-Refers-To-Date")
    if not date:
        return None
    try:
        stamp = iso_date_to_timestamp(date)
    except ValueError:
        return None
    return next((c for c in handle.captures(url) if c.timestamp == stamp and not c.is_revisit), None)


def stored_body(handle: ArchiveHandle, capture: Capture) -> tuple[StoredResponse, Capture | None]:
    """The stored response of `capture`, a revisit's with the body it refers to."""
    try:
        stored = handle.read(capture)
        if stored.status == 304 and stored.revisit_of is not None:
            return handle.read(stored.revisit_of), stored.revisit_of  # a 304's headers say no type
        return stored, stored.revisit_of
    except ArchiveError:
        if not capture.is_revisit:
            raise
    original = _refers_to(handle, capture)
    if original is None:
        raise ArchiveError(f"{capture.url}: the capture this revisit refers to is not in the archive")
    return handle.read(original), original


def capture_text(found: Found) -> CaptureText:
    try:
        stored, body_from = stored_body(found.archive, found.capture)
        kind = stored.content_type or "application/octet-stream"
        if not is_textual(kind):
            return CaptureText(
                found, [], problem=f"not text ({kind}): nothing to compare", body_from=body_from
            )
        content, body_cut = stored.content_prefix(MAX_PARSED_BYTES)
        page = Page(url=stored.url, status=stored.status or 0, headers=tuple(stored.headers), content=content)
        del stored  # the whole payload: only the prefix is kept while parsing
    except ArchiveError as exc:
        return CaptureText(found, [], problem=str(exc))
    encoding, _source = choose_encoding(content, kind, page.declared_charset)
    text = visible_text(replace(page, encoding=encoding))
    cut = body_cut or len(text) > MAX_TEXT_CHARS
    lines = text_lines(text[:MAX_TEXT_CHARS])
    if len(lines) > MAX_LINES:
        lines, cut = lines[:MAX_LINES], True
    return CaptureText(found, lines, cut=cut, body_from=body_from)


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the side-by-side view: a line on either side (or none) and how they differ."""

    tag: str
    left_number: int | None
    left: str | None
    right_number: int | None
    right: str | None


class _TooCostly(Exception):
    """The matcher's work passed its budget."""


class _BudgetedMatcher(difflib.SequenceMatcher[str]):
    """`difflib.SequenceMatcher` that gives up (`_TooCostly`) once it has used more than
    `budget` seconds of its thread's CPU time (checked at each longest-match search, one
    search being at most quadratic in the lines)."""

    def __init__(self, a: list[str], b: list[str], *, autojunk: bool, budget: float) -> None:
        self.deadline = time.thread_time() + budget
        super().__init__(None, a, b, autojunk=autojunk)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        if time.thread_time() > self.deadline:
            raise _TooCostly
        return super().find_longest_match(alo, ahi, blo, bhi)


Opcode = tuple[str, int, int, int, int]


def _coarse_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """Equal start, equal end, and everything between replaced: linear, for texts whose
    detailed alignment costs too much."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    opcodes: list[Opcode] = []
    if start:
        opcodes.append(("equal", 0, start, 0, start))
    a_mid, b_mid = (start, len(a) - end), (start, len(b) - end)
    if a_mid[0] < a_mid[1] or b_mid[0] < b_mid[1]:
        tag = (
            "replace"
            if a_mid[0] < a_mid[1] and b_mid[0] < b_mid[1]
            else "delete"
            if a_mid[0] < a_mid[1]
            else "insert"
        )
        opcodes.append((tag, *a_mid, *b_mid))
    if end:
        opcodes.append(("equal", len(a) - end, len(a), len(b) - end, len(b)))
    return opcodes


@dataclass(frozen=True, slots=True)
class Alignment:
    opcodes: Sequence[Opcode]
    coarse: bool
    """The detailed alignment cost too much: only the common start and end are lined up."""


def align(a: list[str], b: list[str], *, autojunk: bool, budget: float = MATCH_BUDGET) -> Alignment:
    """The opcodes that turn `a` into `b`, in bounded time (see `MATCH_BUDGET`).

    Without `autojunk` (the side-by-side view lines up every repeated line), a search over
    budget is tried again with it (lines found in over 1% of `b` do not start a match),
    then given up for `_coarse_opcodes`.
    """
    for junk in (autojunk, True) if not autojunk else (True,):
        try:
            return Alignment(_BudgetedMatcher(a, b, autojunk=junk, budget=budget).get_opcodes(), False)
        except _TooCostly:
            continue
    return Alignment(_coarse_opcodes(a, b), True)


def side_by_side(left: list[str], right: list[str]) -> tuple[list[Row], bool]:
    """The rows of the side-by-side view, and whether the alignment is coarse."""
    rows: list[Row] = []
    alignment = align(left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in alignment.opcodes:
        pairs = zip_longest(range(i1, i2), range(j1, j2))
        for i, j in pairs:
            rows.append(
                Row(
                    tag,
                    i + 1 if i is not None else None,
                    left[i] if i is not None else None,
                    j + 1 if j is not None else None,
                    right[j] if j is not None else None,
                )
            )
    return rows, alignment.coarse


def _range(start: int, stop: int) -> str:
    """A hunk's line range as ``diff -u`` writes it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _groups(opcodes: Sequence[Opcode], context: int) -> list[list[Opcode]]:
    """The opcodes in hunks with `context` equal lines around each change (as `difflib`)."""
    if not opcodes:
        return []
    codes = list(opcodes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def unified(left: list[str], right: list[str], left_name: str, right_name: str) -> tuple[list[str], bool]:
    """The unified diff's lines (as ``diff -u``, three lines of context), and whether coarse."""
    alignment = align(left, right, autojunk=True)
    groups = _groups(alignment.opcodes, 3)
    if not groups:
        return [], alignment.coarse
    lines = [f"--- {left_name}", f"+++ {right_name}"]
    for group in groups:
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in left[i1:i2])
                continue
            lines.extend("-" + line for line in left[i1:i2])
            lines.extend("+" + line for line in right[j1:j2])
    return lines, alignment.coarse
