"""Rewrite the links of a stylesheet (`url()`, `@import`) and leave every other byte alone.

One regular expression walks the text; comments and ordinary strings are matched first
so that ``content: "url(x)"`` and ``/* url(x) */`` are never taken for links.  Only the
URL inside a match is replaced, in the quoting style it had.
"""

from __future__ import annotations

import re

from .mapping import IMPORT, REQUISITE, LinkMap

__all__ = ["rewrite_css"]

_TOKEN = re.compile(
    r"/\*.*?(?:\*/|\Z)"  # a comment
    r"""|@import\s*(?:"(?P<idq>(?:[^"\\\n]|\\.)*)"|'(?P<isq>(?:[^'\\\n]|\\.)*)')"""
    r"""|(?<![\w-])url\(\s*(?:"(?P<udq>(?:[^"\\\n]|\\.)*)"|'(?P<usq>(?:[^'\\\n]|\\.)*)'"""
    r"""|(?P<ubare>(?:[^)"'\s\\]|\\[0-9a-fA-F]{1,6}[ \t\n\r\f]?|\\.)*))\s*\)"""
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""",  # any other string
    re.DOTALL | re.IGNORECASE,
)
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\\(.)", re.DOTALL)


_GROUPS = (
    ("idq", '"', IMPORT),
    ("isq", "'", IMPORT),
    ("udq", '"', REQUISITE),
    ("usq", "'", REQUISITE),
    ("ubare", "", REQUISITE),
)


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return "" if match.group(2) == "\n" else match.group(2)

    return _ESCAPE.sub(one, text) if "\\" in text else text


def _quoted(value: str, quote: str) -> str:
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\a ")
    return quote + escaped + quote


def rewrite_css(text: str, base: str, links: LinkMap, *, imports: bool = True) -> str:
    """`text` with each `url()` and `@import` mapped through `links`, relative to `base`.

    `imports=False` for a ``style`` attribute, where ``@import`` means nothing.
    """
    if "url(" not in text.lower() and "@import" not in text.lower():
        return text
    out: list[str] = []
    last = 0
    for match in _TOKEN.finditer(text):
        for name, quote, kind in _GROUPS:
            raw = match.group(name)
            if raw is None:
                continue
            if not raw or (kind == IMPORT and not imports):
                break
            mapped = links(_unescape(raw), base, kind)
            if mapped.value is None or mapped.value == raw:
                break
            start, end = match.span(name)
            if quote:
                start, end = start - 1, end + 1
            out.append(text[last:start])
            out.append(_quoted(mapped.value, quote or '"'))
            last = end
            break
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)
