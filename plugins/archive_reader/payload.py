"""An HTTP payload as stored by any tool, turned into the bytes and headers a reader serves.

Our own records hold bodies de-chunked with the headers to match.  Other tools store
what came on the wire: wget 1.14, warcat and warcio's examples keep the chunked
transfer coding (``001c37\\r\\n<!doctype ...\\r\\n0\\r\\n\\r\\n``), and a browser-based
capture may store a body already decoded under its ``Content-Encoding: gzip`` header.
`as_served` undoes the first and drops the header of the second, so replay, export
and the index all see the entity body the headers describe, as pywb does.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

__all__ = ["as_served", "dechunk", "encoded_as"]

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PROBE = 4096


def dechunk(body: bytes) -> bytes | None:
    """`body` with its chunked transfer coding removed; None when it is not chunked
    (no chunk-size line where one must be, or cut before the last chunk)."""
    out: list[bytes] = []
    position = 0
    while True:
        line_end = body.find(b"\n", position)
        if line_end < 0:
            return None
        size_text = body[position:line_end].split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 16:
            return None
        try:
            size = int(size_text, 16)
        except ValueError:
            return None
        if size == 0:
            return b"".join(out)
        start = line_end + 1
        if start + size > len(body):
            return None
        out.append(body[start : start + size])
        position = start + size
        if body.startswith(b"\r\n", position):
            position += 2
        elif body.startswith(b"\n", position):
            position += 1
        else:
            return None


def _codings(headers: Sequence[tuple[str, str]], name: str) -> list[str]:
    found: list[str] = []
    for key, value in headers:
        if key.strip().lower() == name:
            found += [c.strip().lower() for c in value.split(",") if c.strip()]
    return found


def encoded_as(coding: str, body: bytes) -> bool:
    """Whether `body` can be in `coding`: False only when its first bytes rule it out."""
    if not body:
        return True
    match coding:
        case "gzip" | "x-gzip":
            return body.startswith(_GZIP_MAGIC)
        case "zstd":
            return body.startswith(_ZSTD_MAGIC)
        case "deflate":
            for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
                try:
                    zlib.decompressobj(wbits).decompress(body[:_PROBE], 64)
                except zlib.error:
                    continue
                return True
            return False
    return True  # br has no signature: trust the header


def as_served(headers: Sequence[tuple[str, str]], body: bytes) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body to serve for a stored HTTP response.

    A chunked body is de-chunked (left as stored when it is not in fact chunked) and
    ``Transfer-Encoding: chunked`` dropped; a ``Content-Encoding`` the body is plainly
    not in (already decoded by the tool that stored it) is dropped, the body kept as is.
    """
    kept = list(headers)
    transfer = _codings(kept, "transfer-encoding")
    if "chunked" in transfer:
        plain = dechunk(body)
        if plain is not None:
            body = plain
        kept = _without(kept, "transfer-encoding", "chunked")
    content = [c for c in _codings(kept, "content-encoding") if c != "identity"]
    if content and not encoded_as(content[-1], body):
        kept = [(k, v) for k, v in kept if k.strip().lower() != "content-encoding"]
    return kept, body


def _without(headers: list[tuple[str, str]], name: str, coding: str) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    for key, value in headers:
        if key.strip().lower() == name:
            rest = [c.strip() for c in value.split(",") if c.strip() and c.strip().lower() != coding]
            if not rest:
                continue
            value = ", ".join(rest)
        kept.append((key, value))
    return kept
