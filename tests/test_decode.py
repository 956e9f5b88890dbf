"""Content decoding with caps, and charset choice."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
import zstandard

from archiver.decode import choose_encoding, decode_content, known_codec

TEXT = b"<html>" + b"hello world " * 1000 + b"</html>"


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", gzip.compress(TEXT)),
        ("x-gzip", gzip.compress(TEXT)),
        ("deflate", zlib.compress(TEXT)),
        ("deflate", zlib.compress(TEXT)[2:-4]),
        ("br", brotli.compress(TEXT)),
        ("zstd", zstandard.ZstdCompressor().compress(TEXT)),
        ("identity", TEXT),
        (None, TEXT),
        ("gzip, br", brotli.compress(gzip.compress(TEXT))),
    ],
)
def test_decodes(encoding: str | None, body: bytes) -> None:
    decoded = decode_content(body, encoding, 10**7, 1000)
    assert decoded.error is None
    assert decoded.content == TEXT


def test_concatenated_gzip_members() -> None:
    decoded = decode_content(gzip.compress(b"a" * 10) + gzip.compress(b"b" * 10), "gzip", 10**6, 100)
    assert decoded.content == b"a" * 10 + b"b" * 10


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("br", brotli.compress),
        ("zstd", zstandard.ZstdCompressor().compress),
        ("deflate", zlib.compress),
    ],
)
def test_bomb_is_capped(encoding: str, compress: object) -> None:
    bomb = compress(b"\0" * 50_000_000)  # type: ignore[operator]
    decoded = decode_content(bomb, encoding, max_size=1_000_000, max_ratio=1000)
    assert decoded.content == b""
    assert decoded.error is not None and "cap" in decoded.error


def test_ratio_cap() -> None:
    body = gzip.compress(b"\0" * 2_000_000)
    assert "cap" in (decode_content(body, "gzip", 10**9, 10).error or "")


def test_corrupt_and_unknown() -> None:
    assert "corrupt gzip" in (decode_content(b"not gzip", "gzip", 10**6, 10).error or "")
    assert "unsupported" in (decode_content(b"x", "compress", 10**6, 10).error or "")


def test_known_codec_refuses_binary_codecs() -> None:
    assert known_codec("UTF-8") == "utf-8"
    assert known_codec("latin1") == "iso8859-1"
    assert known_codec("rot13") is None
    assert known_codec("zlib") is None
    assert known_codec("x-no-such") is None


def test_choose_encoding_sources() -> None:
    assert choose_encoding(b"abc", "text/html", "utf-8") == ("utf-8", "header")
    assert choose_encoding(b'<meta charset="koi8-r">', "text/html", None) == ("koi8-r", "meta")
    assert choose_encoding(b'<meta charset="utf-16">', "text/html", None) == ("utf-8", "meta")
    assert choose_encoding("plain ünï".encode(), "text/plain", None) == ("utf-8", "default")
    _, source = choose_encoding(
        "Это русский текст, довольно длинный.".encode("cp1251") * 20, "text/plain", None
    )
    assert source == "detected"
