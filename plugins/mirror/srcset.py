"""Rewrite the URLs of a `srcset` value and of a `<meta http-equiv=refresh>` content.

`srcset` is split the way the HTML standard's "parse a srcset attribute" algorithm does
(a URL runs to the next whitespace; trailing commas end a candidate; descriptors run to
a comma outside parentheses), so URLs with commas in them survive.  Only the URL spans
are replaced; descriptors and spacing stay as written.
"""

from __future__ import annotations

import re

from .mapping import PAGE, REQUISITE, LinkMap

__all__ = ["rewrite_refresh", "rewrite_srcset", "srcset_spans"]

_SPACE = " \t\n\r\f"
_REFRESH = re.compile(
    r"""^(?P<lead>\s*[\d.]*\s*[;,]?\s*)(?:url\s*=\s*)?(?P<q>["']?)(?P<url>.*?)(?P=q)\s*$""",
    re.IGNORECASE | re.DOTALL,
)


def srcset_spans(value: str) -> list[tuple[int, int]]:
    """(start, end) of each candidate URL in a srcset value."""
    spans: list[tuple[int, int]] = []
    position, length = 0, len(value)
    while True:
        while position < length and (value[position] in _SPACE or value[position] == ","):
            position += 1
        if position >= length:
            return spans
        start = position
        while position < length and value[position] not in _SPACE:
            position += 1
        end = position
        if value[end - 1] == ",":
            while end > start and value[end - 1] == ",":
                end -= 1
            spans.append((start, end))
            continue
        spans.append((start, end))
        depth = 0
        while position < length:
            char = value[position]
            if char == "(":
                depth += 1
            elif char == ")" and depth:
                depth -= 1
            elif char == "," and not depth:
                position += 1
                break
            position += 1


def rewrite_srcset(value: str, base: str, links: LinkMap) -> str:
    out: list[str] = []
    last = 0
    for start, end in srcset_spans(value):
        mapped = links(value[start:end], base, REQUISITE)
        if mapped.value is None or mapped.value == value[start:end]:
            continue
        new = mapped.value.replace(",", "%2C").replace(" ", "%20")
        out.append(value[last:start])
        out.append(new)
        last = end
    if not out:
        return value
    out.append(value[last:])
    return "".join(out)


def rewrite_refresh(content: str, base: str, links: LinkMap) -> str:
    """The content of a meta refresh (``5; url=/next``) with its URL mapped."""
    match = _REFRESH.match(content)
    if match is None or not match.group("url") or not match.group("lead").strip():
        return content
    mapped = links(match.group("url"), base, PAGE)
    if mapped.value is None:
        return content
    start, end = match.span("url")
    return content[:start] + mapped.value + content[end:]
