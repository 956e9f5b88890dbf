"""A page as the browser capture rendered it (its ``urn:dom:`` record), made static.

The rendered DOM is what the page's scripts built.  Its ``<script>`` elements are still in
it; run again, from disk or in the web UI, they would build the page a second time from
requests that cannot be answered there (a ``fetch()`` from file://), and put the shell's
"Loading..." back.  The snapshot keeps the result and drops the scripts, with the
``<noscript>`` fallbacks that a browser with scripts would not have shown.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

__all__ = ["DOM_PREFIX", "SCREENSHOT_PREFIX", "static_snapshot"]

DOM_PREFIX = "urn:dom:"
SCREENSHOT_PREFIX = "urn:screenshot:"
"""The WARC-Target-URI prefixes of the browser capture's resource records (as Browsertrix names them)."""


def static_snapshot(dom: str) -> str:
    """`dom` (a rendered page's serialized DOM) without its scripts and ``<noscript>`` fallbacks."""
    tree = LexborHTMLParser(dom)
    for node in tree.css("script, noscript"):
        node.decompose()
    return tree.html or ""
