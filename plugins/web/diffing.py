"""The text of two captures of a page and the difference between them.

Each capture's visible text (`visible_text`, what the search index reads) is cut into
sentence-sized lines so that `difflib` can line them up; both texts are capped before
the diff, so a huge or hostile page costs bounded time and memory.  A revisit has no
body of its own: the one it refers to is read (by payload digest, or for a
server-not-modified revisit by its ``WARC-Refers-To-*`` headers).  Everything here
blocks: the views call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass, replace
from itertools import zip_longest

from warcio.timeutils import iso_date_to_timestamp

from archiver.decode import choose_encoding, is_textual
from archiver.errors import ArchiveError
from archiver.model import Page

from ..index.extract import visible_text
from ..warc.members import parse_record, read_member
from ..warc.reader import Capture, StoredResponse
from .library import ArchiveHandle, Found

MAX_TEXT_CHARS = 100_000
"""Visible text compared per capture; the rest is cut (and the page says so)."""
MAX_LINES = 3_000
LINE_WIDTH = 160
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class CaptureText:
    """The lines of one capture's visible text, or why there are none."""

    found: Found
    lines: list[str]
    cut: bool = False
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
    path = reader.path_of(capture)
    with path.open("rb") as stream:
        member = read_member(stream, capture.offset, reader.limits)
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
        content = stored.content()
    except ArchiveError as exc:
        return CaptureText(found, [], problem=str(exc))
    kind = stored.content_type or "application/octet-stream"
    if not is_textual(kind):
        return CaptureText(found, [], problem=f"not text ({kind}): nothing to compare", body_from=body_from)
    page = Page(url=stored.url, status=stored.status or 0, headers=tuple(stored.headers), content=content)
    encoding, _source = choose_encoding(content, kind, page.declared_charset)
    text = visible_text(replace(page, encoding=encoding))
    cut = len(text) > MAX_TEXT_CHARS
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


def side_by_side(left: list[str], right: list[str]) -> list[Row]:
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
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
    return rows


def unified(left: list[str], right: list[str], left_name: str, right_name: str) -> list[str]:
    return list(difflib.unified_diff(left, right, left_name, right_name, lineterm="", n=3))
