"""Which archived URL may stand in for one that is not archived: pywb's fuzzy match.

A site's own search form (``search.html?q=lambda``) or a cache-busting ``?v=3`` makes the
browser ask for a URL the crawl never saw, while the same path was archived.  pywb's general
rule (the last rule of its ``rules.yaml``, ``url_prefix: ''``, with its ``default_filters``)
decides which captures may stand in, and replay follows it:

* when the requested path ends in a file extension (``search.html``, ``app.js``) other than
  a server script's (asp, aspx, jsp, php, pl, exe, dll), or the capture is of a streaming or
  Flash type, any capture of that path does, whatever its query;
* otherwise (``/search?q=x``, ``/page.php?id=2``) the query matters: only a capture whose key
  is the same once cache-busting parameters (``_``, ``cb``, ``uncache`` with digits,
  ``utm_*``, a JSONP ``callback``'s name) are dropped from both.

At most `SEARCH_LIMIT` captures of the path are looked at, as pywb's ``fuzzy_search_limit``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from ..archive_reader.reader import Capture
from ..archive_reader.surt import surt

SEARCH_LIMIT = 100
NOT_FILE_EXTENSIONS = frozenset({"asp", "aspx", "jsp", "php", "pl", "exe", "dll"})
ANY_QUERY_TYPES = frozenset(
    {
        "application/x-shockwave-flash",
        "application/dash+xml",
        "application/x-mpegurl",
        "application/vnd.apple.mpegurl",
    }
)
_CACHE_BUSTER = re.compile(r"(_|cb|uncache)=\d+")
_TRACKER = re.compile(r"utm_[^=]+=.+")
_JSONP = re.compile(r"(callback=jsonp).+")


def _normalized(key: str) -> str:
    """`key` without the query parameters pywb's ``url_normalize`` rules drop.

    pywb applies them as substitutions on the key; taken parameter by parameter here, so
    that dropping the first one of a query leaves a well-formed rest (``?_=1&q=a`` is ``?q=a``).
    """
    path, mark, query = key.partition("?")
    if not mark:
        return key
    kept = []
    for parameter in query.split("&"):
        if _CACHE_BUSTER.fullmatch(parameter) or _TRACKER.fullmatch(parameter):
            continue
        jsonp = _JSONP.fullmatch(parameter)
        kept.append(jsonp.group(1) if jsonp else parameter)
    return f"{path}?{'&'.join(kept)}" if kept else path


def _is_file(url: str) -> bool:
    """Whether the last segment of the path has a file's extension (pywb's ``get_ext``)."""
    suffix = PurePosixPath(urlsplit(url).path.rsplit("/", 1)[-1]).suffix[1:].lower()
    return bool(suffix) and suffix not in NOT_FILE_EXTENSIONS


def stands_in(url: str, capture: Capture) -> bool:
    """Whether `capture`, of `url`'s path with another query (or none), may replay `url`."""
    if _is_file(url) or (capture.mime or "").lower() in ANY_QUERY_TYPES:
        return True
    return _normalized(surt(url)) == _normalized(capture.urlkey)
