"""Links in CSS: `url(...)` is a requisite, `@import` an import (followed further)."""

from __future__ import annotations

import re

from archiver import LinkKind

from .collector import LinkCollector

_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
# One pass finds both forms; at an `@import url(...)` the first branch wins, so the URL is
# taken once, as an import.  Strings stop at a newline and unquoted URLs at a parenthesis,
# as in CSS, and no quantifier backtracks: the pass stays linear on hostile input.
_URL = r"""url\(\s*+(?:"([^"\n]*+)"|'([^'\n]*+)'|([^()\s"']*+))\s*+\)"""
_REFERENCE = re.compile(
    r"""@import\s*+(?:""" + _URL + r"""|"([^"\n]*+)"|'([^'\n]*+)')|""" + _URL, re.IGNORECASE
)


def css_links(text: str, out: LinkCollector, *, imports: bool = True) -> None:
    """Add the links of a stylesheet or a `style` attribute (`imports=False`: no @import there)."""
    if "/*" in text:
        text = _COMMENT.sub(" ", text)
    for match in _REFERENCE.finditer(text):
        groups = match.groups()
        imported = next((g for g in groups[:5] if g is not None), None)
        if imported is not None:
            if imports and imported:
                out.add(imported, LinkKind.IMPORT)
        else:
            url = next((g for g in groups[5:] if g is not None), "")
            if url:
                out.add(url, LinkKind.REQUISITE)
        if out.overflow:
            return
