"""Payload digests compared by algorithm and value, however a tool spelled them.

WARC/1.1 names the algorithm freely: ``sha1:``, ``sha-1:``, ``sha256:``, ``sha-256:``
are all seen, with the value in base32 (warcio, Heritrix, wget) or hex (some WACZ
writers).  `digest_key` turns each into one spelling, ``ALGORITHM:BASE32`` with the
algorithm lower-cased and without its dash, so that a revisit finds its original
whichever tool wrote either record.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

__all__ = ["digest_key", "digest_matches", "parse_digest", "payload_digest", "sha1_label"]

_SIZES = {"sha1": 20, "sha256": 32, "sha512": 64, "md5": 16}
"""The algorithms whose values are recognized, and their digest sizes in bytes."""


def parse_digest(label: str | None) -> tuple[str, bytes] | None:
    """(algorithm, raw digest) of a ``name:value`` label; None when it is not one.

    An algorithm of unknown size keeps its value's text as the raw digest, so that two
    labels spelled alike still match.
    """
    if not label:
        return None
    name, sep, value = label.strip().partition(":")
    value = value.strip()
    if not sep or not value:
        return None
    algorithm = name.strip().lower().replace("-", "").replace("_", "")
    size = _SIZES.get(algorithm)
    if size is None:
        return algorithm, value.encode("utf-8", "surrogateescape")
    if len(value) == 2 * size:
        try:
            return algorithm, bytes.fromhex(value)
        except ValueError:
            pass
    padded = value.upper().rstrip("=")
    padded += "=" * (-len(padded) % 8)
    try:
        raw = base64.b32decode(padded)
    except (binascii.Error, ValueError):
        return None
    return (algorithm, raw) if len(raw) == size else None


def digest_key(label: str | None) -> str | None:
    """The one spelling of a digest label (``sha256:BASE32``); None when it is not one."""
    parsed = parse_digest(label)
    if parsed is None:
        return None
    algorithm, raw = parsed
    if algorithm not in _SIZES:
        return f"{algorithm}:{raw.decode('utf-8', 'surrogateescape')}"
    return f"{algorithm}:{base64.b32encode(raw).decode('ascii')}"


def digest_matches(label: str, candidates: list[bytes]) -> bool:
    """Whether one of `candidates` has the digest `label` names; True for an algorithm
    this reader cannot compute (there is nothing to say about it)."""
    parsed = parse_digest(label)
    if parsed is None:
        name = label.partition(":")[0].strip().lower().replace("-", "")
        return name not in _SIZES  # a known algorithm with a value that is no digest: a mismatch
    algorithm, expected = parsed
    if algorithm not in _SIZES:
        return True
    return any(hashlib.new(algorithm, data).digest() == expected for data in candidates)


def payload_digest(body: bytes) -> str:
    """``sha1:BASE32``, the digest form warcio, pywb and CDXJ use (and the WARC writer writes)."""
    return sha1_label(hashlib.sha1(body).digest())


def sha1_label(digest: bytes) -> str:
    """A SHA-1 digest as ``sha1:BASE32``."""
    return "sha1:" + base64.b32encode(digest).decode("ascii")
