"""Undo Content-Encoding and choose a charset, with caps a hostile server cannot get past.

aiohttp's own decompression has no total cap (a 200 KiB gzip body became 200 MiB), so the
session runs with it off and the body is decoded here, in bounded steps, for parsing only:
the archive keeps the bytes as they came.
"""

from __future__ import annotations

import codecs
import io
import re
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import brotli
import charset_normalizer
import zstandard

if TYPE_CHECKING:
    from .config import Config
    from .model import Page

_STEP = 64 * 1024
TEXT_TYPES_PREFIX = "text/"
TEXT_TYPES = frozenset(
    {
        "application/xhtml+xml",
        "application/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/json",
        "application/javascript",
        "application/x-javascript",
        "application/ld+json",
        "image/svg+xml",
    }
)
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:\-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([a-zA-Z0-9_.\-]+)["']""")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class DecodeLimitError(Exception):
    """The decoded body would pass the size or ratio cap; `partial` is what was decoded by then
    (the decoder's own buffer, not a copy: a cap of 128 MB must not cost 256)."""

    def __init__(self, partial: bytes | bytearray = b"") -> None:
        super().__init__("decoded body over its cap")
        self.partial = partial


@dataclass(frozen=True, slots=True)
class Decoded:
    content: bytes
    error: str | None = None
    cut: bool = False
    """Only the first bytes were decoded (`decode_content`'s `prefix`)."""


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """zlib/gzip/raw deflate, also several concatenated gzip members, never past `limit`."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits)
        chunk = inflater.decompress(data, limit - len(out) + 1)
        out += chunk
        while inflater.unconsumed_tail and len(out) <= limit:
            out += inflater.decompress(inflater.unconsumed_tail, limit - len(out) + 1)
        if len(out) > limit:
            raise DecodeLimitError(out)
        if not inflater.eof:
            break
        data = inflater.unused_data.lstrip(b"\0")
    return bytes(out)


def _deflate(data: bytes, limit: int) -> bytes:
    try:
        return _inflate(data, zlib.MAX_WBITS, limit)
    except zlib.error:
        return _inflate(data, -zlib.MAX_WBITS, limit)


def _brotli(data: bytes, limit: int) -> bytes:
    decompressor = brotli.Decompressor()
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(data) or 1, _STEP):
        out += decompressor.process(view[start : start + _STEP], output_buffer_limit=_STEP)
        while not decompressor.can_accept_more_data():
            out += decompressor.process(b"", output_buffer_limit=_STEP)
            if len(out) > limit:
                raise DecodeLimitError(out)
        if len(out) > limit:
            raise DecodeLimitError(out)
    # output still held once all input is in (a body that compresses very well)
    while not decompressor.is_finished() and (chunk := decompressor.process(b"", output_buffer_limit=_STEP)):
        out += chunk
        if len(out) > limit:
            raise DecodeLimitError(out)
    return bytes(out)


def _zstd(data: bytes, limit: int) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out = bytearray()
    while chunk := reader.read(_STEP):
        out += chunk
        if len(out) > limit:
            raise DecodeLimitError(out)
    return bytes(out)


_DECODERS = {
    "gzip": lambda data, limit: _inflate(data, 16 + zlib.MAX_WBITS, limit),
    "x-gzip": lambda data, limit: _inflate(data, 16 + zlib.MAX_WBITS, limit),
    "deflate": _deflate,
    "br": _brotli,
    "zstd": _zstd,
}


def decode_content(
    body: bytes, content_encoding: str | None, max_size: int, max_ratio: int, *, prefix: bool = False
) -> Decoded:
    """`body` with its Content-Encoding undone, capped at `max_size` and `max_ratio` x its size.

    On a cap or a corrupt stream the result is empty with `error` set: the page is still
    archived as received, it just is not parsed.  With `prefix`, a body over the cap gives
    its first bytes instead (`cut` set): for readers that only look at the start of a page.
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        if prefix and len(body) > max_size:
            return Decoded(body[:max_size], cut=True)
        return Decoded(body)
    limit = min(max_size, max(len(body), 1024) * max_ratio)
    data, cut = body, False
    for coding in reversed(codings):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            return Decoded(b"", f"unsupported content-encoding {coding!r}")
        try:
            data = decoder(data, limit)
        except DecodeLimitError as exc:
            if not prefix:
                return Decoded(b"", f"decoded body exceeds {limit} bytes (decompression cap)")
            data, cut = bytes(memoryview(exc.partial)[:limit]), True
        except (zlib.error, brotli.error, zstandard.ZstdError, EOFError, ValueError) as exc:
            return Decoded(b"", f"corrupt {coding} body: {exc}")
    return Decoded(data, cut=cut)


def is_textual(content_type: str) -> bool:
    return content_type.startswith(TEXT_TYPES_PREFIX) or content_type in TEXT_TYPES


def known_codec(label: str | None) -> str | None:
    """The Python codec name for a charset label, or None for an unknown or unsafe one."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in {"x-user-defined", "replacement"}:
        return None
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError):
        return None
    # A page cannot ask us to run a binary codec such as rot13 or zlib on it.
    if not codecs.lookup(name)._is_text_encoding:
        return None
    return name


def choose_encoding(content: bytes, content_type: str, declared: str | None) -> tuple[str, str]:
    """(codec, source): the Content-Type charset, then a BOM, `<meta>`/XML declaration, then detection."""
    for bom, name in _BOMS:
        if content.startswith(bom):
            return name, "bom"
    header = known_codec(declared)
    if header:
        return header, "header"
    head = content[:4096]
    if "html" in content_type or "xml" in content_type:
        found = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
        if found:
            meta = known_codec(found.group(1).decode("ascii", "replace"))
            if meta:
                # A page served as UTF-8-less bytes but declaring utf-16 in <meta> is lying.
                return ("utf-8" if meta.startswith("utf-16") else meta), "meta"
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        best = charset_normalizer.from_bytes(content[:65536]).best()
        if best is not None and known_codec(best.encoding):
            return known_codec(best.encoding) or "utf-8", "detected"
        return "windows-1252", "default"
    return "utf-8", "default"


async def decode_stored(page: Page, config: Config) -> Decoded:
    """An archived body with its Content-Encoding undone, within the crawl's caps; in a thread,
    since inflating up to `max_decoded_size` must not hold the event loop."""
    import asyncio

    return await asyncio.to_thread(
        decode_content,
        page.body,
        page.header("Content-Encoding"),
        config.max_decoded_size,
        config.max_decompression_ratio,
    )
