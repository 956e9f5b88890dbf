"""Turn the raw attribute values of one document into absolute http(s) URLs, fast.

`urllib.parse.urljoin` costs about 10 us a call and was most of the time spent per page,
so the common shapes (absolute, root-relative, path-relative, query-only) are joined by
concatenation against a base split once per document; anything with dot segments or
an unusual form goes through `urljoin`, which stays the reference behaviour.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

# What the URL standard strips from both ends of an attribute value (C0 controls and space).
_STRIP = "".join(chr(code) for code in range(0x21))

# A scheme followed by ':' at the start of a reference.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

# An absolute http(s) URL whose authority can be fetched: a host without spaces or stray
# brackets (`http://[::1`, `http://exa mple.org/`) is refused here instead of raising later.
_FETCHABLE = re.compile(
    r"https?://"
    r"(?:[^\s/?#@\[\]\\]*@)?"
    r"(?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@\[\]\\:]+)"
    r"(?::[0-9]*)?"
    r"(?:[/?]|\Z)",
    re.IGNORECASE,
)


def is_fetchable(url: str) -> bool:
    """True for an absolute http(s) URL with a well-formed authority."""
    return _FETCHABLE.match(url) is not None


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for a path that starts with '/': `/a/./b/../c` is `/a/c`."""
    segments = path.split("/")
    kept: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")
    return "/" + "/".join(kept)


class Resolver:
    """Resolves references against one base URL, with the base split once.

    `resolve` returns the absolute URL without its fragment, or None for what a crawler
    cannot fetch: other schemes (javascript:, mailto:, data:, tel:...), same-document
    references (``#top``, empty), and malformed hosts.
    """

    __slots__ = ("_base", "_directory", "_origin", "_scheme", "_without_query")

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self._base = base.partition("#")[0]
        self._scheme = parts.scheme.lower()
        self._origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path or "/"
        self._without_query = self._origin + path
        self._directory = self._origin + path[: path.rfind("/") + 1]

    @classmethod
    def for_url(cls, base: str) -> Resolver | None:
        """A resolver for `base`, or None when `base` is not a fetchable http(s) URL."""
        if not is_fetchable(base):
            return None
        try:
            return cls(base)
        except ValueError:
            return None

    def resolve(self, raw: str) -> str | None:
        ref = raw.strip(_STRIP)
        if "\t" in ref or "\n" in ref or "\r" in ref:
            ref = ref.replace("\t", "").replace("\n", "").replace("\r", "")
        hash_at = ref.find("#")
        if hash_at >= 0:
            ref = ref[:hash_at]
        if not ref:
            return None
        first = ref[0]
        if first == "/":
            if ref.startswith("//"):
                return self._checked(self._scheme + ":" + ref)
            joined = self._origin + ref
        elif first == "?":
            return self._without_query + ref
        else:
            match = _SCHEME.match(ref) if ":" in ref else None
            if match is not None:
                scheme = ref[: match.end() - 1].lower()
                if scheme != "http" and scheme != "https":
                    return None
                if ref.startswith("//", match.end()):
                    return self._checked(ref)
                return self._slow(ref)
            joined = self._directory + ref
        if "\\" in ref:
            return self._slow(ref)
        if "./" in ref or ".?" in ref or ref[-1] == ".":
            return self._without_dot_segments(joined)
        return joined

    def _without_dot_segments(self, joined: str) -> str:
        """`joined` (this origin + path + query) with `.` and `..` segments applied."""
        start = len(self._origin)
        query_at = joined.find("?", start)
        end = len(joined) if query_at < 0 else query_at
        return self._origin + remove_dot_segments(joined[start:end]) + joined[end:]

    def _slow(self, ref: str) -> str | None:
        """The reference behaviour, for dot segments, backslashes and `http:path` forms."""
        path_end = ref.find("?")
        if path_end < 0:
            path_end = len(ref)
        if "\\" in ref[:path_end]:
            # Browsers read a backslash in the path of an http(s) URL as a slash.
            ref = ref[:path_end].replace("\\", "/") + ref[path_end:]
        try:
            joined = urljoin(self._base, ref)
        except ValueError:
            return None
        return self._checked(joined)

    @staticmethod
    def _checked(url: str) -> str | None:
        return url if _FETCHABLE.match(url) is not None else None
