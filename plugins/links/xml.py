"""Links of XML documents (feeds, XHTML served as XML, SVG) without an XML parser.

A regular expression over `href`/`src` attributes, RSS `<link>` text and
`<?xml-stylesheet?>`: nothing is expanded, so entity bombs and external entities cost
nothing, and the pass is linear.
"""

from __future__ import annotations

import html
import re

from archiver.api import LinkKind

from .collector import LinkCollector

_REFERENCE = re.compile(
    r"""<\?xml-stylesheet\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')"""
    r"""|\s(?:[\w.\-]+:)?(href|src|url)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')"""
    r"""|<link>\s*([^<\s]+)\s*</link>""",
    re.IGNORECASE,
)
_KINDS = {"href": LinkKind.PAGE, "url": LinkKind.PAGE, "src": LinkKind.REQUISITE}


def xml_links(text: str, out: LinkCollector) -> None:
    """Add the links of an XML document."""
    for match in _REFERENCE.finditer(text):
        sheet_double, sheet_single, name, double, single, feed_link = match.groups()
        if name is not None:
            value = double if double is not None else single
            kind = _KINDS[name.lower()]
        elif feed_link is not None:
            value, kind = feed_link, LinkKind.PAGE
        else:
            value = sheet_double if sheet_double is not None else sheet_single
            kind = LinkKind.REQUISITE
        if value:
            out.add(html.unescape(value) if "&" in value else value, kind)
        if out.overflow:
            return
