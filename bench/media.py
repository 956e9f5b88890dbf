"""Images and a font that browsers decode, made with the standard library (and brotli).

The demo site is what a newcomer replays first: a broken-image icon or a font error there
reads as a replay bug.  Each file is deterministic for a given `random.Random` and roughly
the size asked for, its bytes mostly random pixel data, so compression does not shrink
the benchmark's traffic:

* PNG: RGB noise, zlib-compressed scanlines;
* GIF: 128-colour noise in an "uncompressed" LZW stream (a clear code often enough that
  every code stays 8 bits wide);
* JPEG: a greyscale baseline mosaic of 8x8 blocks, each block its DC value only;
* ICO: one PNG inside;
* TTF and WOFF2: a TrueType font whose glyphs are random polygons mapped to the Private
  Use Area (text keeps its fallback face: the font loads and is used for nothing), the
  WOFF2 one brotli-compressed with the null transform of glyf and loca.
"""

from __future__ import annotations

import math
import random
import struct
import zlib

__all__ = ["gif", "ico", "jpeg", "png", "ttf", "woff2"]


# -- PNG, ICO ----------------------------------------------------------------------------


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(rng: random.Random, size: int, width: int = 0) -> bytes:
    """An RGB PNG of random pixels, about `size` bytes (square unless `width` is given)."""
    width = width or max(8, math.isqrt(size // 3))
    height = max(1, size // (width * 3 + 1))
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows, 6))
        + _png_chunk(b"IEND", b"")
    )


def ico(rng: random.Random, size: int) -> bytes:
    """A favicon: one 32x32-or-so PNG image in an ICO container."""
    image = png(rng, size - 22, width=32)
    width, height = struct.unpack(">II", image[16:24])
    entry = struct.pack("<BBBBHHII", width % 256, height % 256, 0, 0, 1, 32, len(image), 22)
    return struct.pack("<HHH", 0, 1, 1) + entry + image


# -- GIF ---------------------------------------------------------------------------------

_GIF_COLOURS = 128
_GIF_RUN = 100
"""Pixels between two clear codes: the code table never grows past 8-bit codes."""


def gif(rng: random.Random, size: int) -> bytes:
    """A 128-colour GIF of random pixels, about `size` bytes, about square."""
    width = max(8, math.isqrt(size))
    height = max(1, (size - 400) // width)
    pixels = bytes(b % _GIF_COLOURS for b in rng.randbytes(width * height))
    clear, end = _GIF_COLOURS, _GIF_COLOURS + 1
    codes = bytearray()
    for start in range(0, len(pixels), _GIF_RUN):
        codes.append(clear)
        codes += pixels[start : start + _GIF_RUN]
    codes.append(end)
    parts = (codes[i : i + 255] for i in range(0, len(codes), 255))
    blocks = b"".join(bytes([len(part)]) + part for part in parts)
    palette = rng.randbytes(_GIF_COLOURS * 3)
    screen = struct.pack("<HHBBB", width, height, 0xF6, 0, 0)  # global table of 2**(6+1) colours
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return b"GIF89a" + screen + palette + image + bytes([7]) + blocks + b"\x00\x3b"


# -- JPEG --------------------------------------------------------------------------------


class _Bits:
    """Entropy-coded JPEG bits, most significant first, with 0xFF byte stuffing."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.value = 0
        self.count = 0

    def put(self, value: int, length: int) -> None:
        for shift in range(length - 1, -1, -1):
            self.value = (self.value << 1) | ((value >> shift) & 1)
            self.count += 1
            if self.count == 8:
                self.out.append(self.value)
                if self.value == 0xFF:
                    self.out.append(0)
                self.value = self.count = 0

    def flush(self) -> bytes:
        if self.count:
            self.put((1 << (8 - self.count)) - 1, 8 - self.count)  # pad with 1 bits
        return bytes(self.out)


def _segment(marker: int, data: bytes) -> bytes:
    return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data


def jpeg(rng: random.Random, size: int) -> bytes:
    """A greyscale baseline JPEG mosaic (each 8x8 block one random grey), about `size` bytes."""
    blocks_across = max(1, math.isqrt(size // 2))
    # DC differences of categories 0-11 all get 4-bit codes; the only AC symbol is EOB.
    dc_table = bytes([0x00]) + bytes([0, 0, 0, 12, *[0] * 12]) + bytes(range(12))
    ac_table = bytes([0x10]) + bytes([1, *[0] * 15]) + bytes([0x00])
    blocks_down = max(1, size // (blocks_across * 2))
    bits = _Bits()
    previous = 0
    for _ in range(blocks_across * blocks_down):
        dc = rng.randint(-1000, 1000)
        diff, previous = dc - previous, dc
        category = abs(diff).bit_length()
        bits.put(category, 4)
        if category:
            bits.put(diff if diff > 0 else diff + (1 << category) - 1, category)
        bits.put(0, 1)  # end of block: every AC coefficient is zero
    frame = struct.pack(">BHHB", 8, blocks_down * 8, blocks_across * 8, 1) + bytes([1, 0x11, 0])
    return (
        b"\xff\xd8"
        + _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + _segment(0xDB, b"\x00" + bytes([1] * 64))
        + _segment(0xC0, frame)
        + _segment(0xC4, dc_table + ac_table)
        + _segment(0xDA, bytes([1, 1, 0x00, 0, 63, 0]))
        + bits.flush()
        + b"\xff\xd9"
    )


# -- TrueType, WOFF2 ---------------------------------------------------------------------

_UNITS_PER_EM = 1000
_FIRST_CODE = 0xE000
"""Glyphs are mapped from here, the Private Use Area: no ordinary text uses them."""


def _glyph(rng: random.Random, points: int) -> tuple[bytes, int]:
    """A glyf entry: one closed polygon of `points` random on-curve points, and its xMax."""
    xs = [rng.randint(50, 550) for _ in range(points)]
    ys = [rng.randint(0, 700) for _ in range(points)]
    head = struct.pack(">hhhhh", 1, min(xs), min(ys), max(xs), max(ys))
    flags = bytes([0x01] * points)  # on curve, 16-bit coordinate deltas
    dx = [b - a for a, b in zip([0, *xs], xs, strict=False)]
    dy = [b - a for a, b in zip([0, *ys], ys, strict=False)]
    body = struct.pack(">HH", points - 1, 0) + flags + struct.pack(f">{points}h", *dx)
    body += struct.pack(f">{points}h", *dy)
    data = head + body
    return data + b"\x00" * (-len(data) % 4), max(xs)


def _cmap(glyphs: int) -> bytes:
    """A format 4 cmap: space, then U+E000... to glyphs 1..N-1."""
    segments = [(0x20, 0x20, 1), (_FIRST_CODE, _FIRST_CODE + glyphs - 3, 2), (0xFFFF, 0xFFFF, 0)]
    count = len(segments)
    power = 1 << (count.bit_length() - 1)
    ends = [end for _, end, _ in segments]
    starts = [start for start, _, _ in segments]
    deltas = [(first - start) % 0x10000 if first else 1 for start, _, first in segments]
    body = struct.pack(">HHHH", count * 2, power * 2, power.bit_length() - 1, count * 2 - power * 2)
    body += struct.pack(f">{count}H", *ends) + b"\x00\x00" + struct.pack(f">{count}H", *starts)
    body += struct.pack(f">{count}H", *deltas) + struct.pack(f">{count}H", *[0] * count)
    subtable = struct.pack(">HHH", 4, 6 + len(body), 0) + body
    return struct.pack(">HHHHI", 0, 1, 3, 1, 12) + subtable


def _name(family: str) -> bytes:
    strings = {
        1: family,
        2: "Regular",
        3: f"{family} Regular 1.0",
        4: f"{family} Regular",
        5: "Version 1.0",
        6: f"{family.replace(' ', '')}-Regular",
    }
    records, pool = b"", b""
    for name_id, text in strings.items():
        data = text.encode("utf-16-be")
        records += struct.pack(">HHHHHH", 3, 1, 0x409, name_id, len(data), len(pool))
        pool += data
    return struct.pack(">HHH", 0, len(strings), 6 + len(records)) + records + pool


def _checksum(data: bytes) -> int:
    padded = data + b"\x00" * (-len(data) % 4)
    return int(sum(struct.unpack(f">{len(padded) // 4}I", padded))) & 0xFFFFFFFF


def _tables(rng: random.Random, size: int, family: str) -> dict[bytes, bytes]:
    """The tables of a TrueType font with enough glyphs for about `size` bytes of glyf."""
    count = max(4, size // 90)
    outlines = [(b"", 0), (b"", 0)] + [_glyph(rng, 20) for _ in range(count - 2)]  # .notdef, space
    glyf = b"".join(data for data, _ in outlines)
    offsets = [0]
    for data, _ in outlines:
        offsets.append(offsets[-1] + len(data))
    advance = 600
    head = struct.pack(
        ">IIIIHHqqhhhhHHhhh",
        0x00010000, 0x00010000, 0, 0x5F0F3CF5, 0x000B, _UNITS_PER_EM, 0, 0,
        0, 0, 600, 700, 0, 8, 2, 1, 0,
    )  # fmt: skip
    hhea = struct.pack(
        ">IhhhHhhhhhhhhhhhH", 0x00010000, 800, -200, 0, advance, 0, 0, 600, 1, 0, 0, 0, 0, 0, 0, 0, count
    )
    maxp = struct.pack(">IHHHHHHHHHHHHHH", 0x00010000, count, 20, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0)
    hmtx = b"".join(struct.pack(">Hh", advance, 0) for _ in range(count))
    os2 = struct.pack(
        ">HhHHH10hh10s4I4sHHHhhhHHIIhhHHH",
        4, advance, 400, 5, 0,
        650, 600, 0, 75, 650, 600, 0, 350, 50, 250,
        0, b"\x00" * 10, 0, 0, 0, 0, b"NONE", 0x40, 0x20, _FIRST_CODE + count - 3,
        800, -200, 0, 800, 200, 1, 0, 500, 700, 0, 0x20, 1,
    )  # fmt: skip
    post = struct.pack(">IihhIIIII", 0x00030000, 0, -100, 50, 0, 0, 0, 0, 0)
    return {
        b"OS/2": os2,
        b"cmap": _cmap(count),
        b"glyf": glyf,
        b"head": head,
        b"hhea": hhea,
        b"hmtx": hmtx,
        b"loca": struct.pack(f">{len(offsets)}I", *offsets),
        b"maxp": maxp,
        b"name": _name(family),
        b"post": post,
    }


def _sfnt(tables: dict[bytes, bytes]) -> bytes:
    count = len(tables)
    power = 1 << (count.bit_length() - 1)
    shift = power.bit_length() - 1
    header = struct.pack(">IHHHH", 0x00010000, count, power * 16, shift, count * 16 - power * 16)
    offset = len(header) + 16 * count
    directory, body = b"", b""
    for tag in sorted(tables):
        data = tables[tag]
        directory += tag + struct.pack(">III", _checksum(data), offset + len(body), len(data))
        body += data + b"\x00" * (-len(data) % 4)
    font = bytearray(header + directory + body)
    head_at = offset + sum(len(tables[t]) + (-len(tables[t]) % 4) for t in sorted(tables) if t < b"head")
    struct.pack_into(">I", font, head_at + 8, (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF)
    return bytes(font)


def ttf(rng: random.Random, size: int, family: str = "Sitegen Body") -> bytes:
    """A valid TrueType font of about `size` bytes."""
    return _sfnt(_tables(rng, size, family))


_WOFF2_TAGS = (
    b"cmap", b"head", b"hhea", b"hmtx", b"maxp", b"name", b"OS/2", b"post", b"cvt ", b"fpgm", b"glyf", b"loca"
)  # fmt: skip
"""The start of WOFF2's table of known tags: a table is named by its index there."""


def _base128(value: int) -> bytes:
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


def woff2(rng: random.Random, size: int, family: str = "Sitegen Body") -> bytes:
    """A valid WOFF2 font of about `size` bytes (glyf and loca with the null transform)."""
    import brotli  # a dependency of archiver (Content-Encoding: br)

    font = _sfnt(_tables(rng, size, family))
    count = struct.unpack(">H", font[4:6])[0]
    records = [struct.unpack(">4sIII", font[12 + 16 * i : 28 + 16 * i]) for i in range(count)]
    order = sorted(records, key=lambda r: (r[0] == b"loca", r[0]))  # loca follows glyf
    order.insert(order.index(next(r for r in order if r[0] == b"glyf")) + 1, order.pop())
    directory, stream = b"", b""
    for tag, _checksum_value, offset, length in order:
        transform = 3 << 6 if tag in (b"glyf", b"loca") else 0  # 3: glyf/loca not transformed
        directory += bytes([_WOFF2_TAGS.index(tag) | transform]) + _base128(length)
        stream += font[offset : offset + length]
    compressed = bytes(brotli.compress(stream, mode=brotli.MODE_FONT, quality=11))
    body = directory + compressed
    total = 48 + len(body)
    total += -total % 4
    sizes = (total, count, 0, len(font), len(compressed))
    header = struct.pack(">4sIIHHIIHHIIIII", b"wOF2", 0x00010000, *sizes, 1, 0, 0, 0, 0, 0, 0)
    return (header + body).ljust(total, b"\x00")
