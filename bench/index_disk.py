"""Where an archive's index bytes go: each part of its whoosh segments, taken apart.

Every segment is read through whoosh's own readers (its term index, postings file and
columns), and each byte is put in one part:

- `term dictionary`: the term index (whoosh's `.trm`, or the compact codec's `.ctd`): each
  term's key, its statistics and the pointer to its postings (or postings inlined there),
  and whoosh's hash tables.
- `postings: ids+weights`, `positions`, `block headers`: the postings file (`.pst` or
  `.cpb`), each block's bytes shared between its document ids and weights and its values
  (the positions of a phrase field, the counts of the others) as they weigh uncompressed;
  the headers are each block's length and statistics.  `uncompressed blocks` counts the
  bytes of the blocks stored without compression (a cross-section of the three parts).
- `stored: text (excerpt)`, `stored: other fields`: the stored-fields column (the text kept
  for snippets: the whole text before, its first 2,000 characters now).
- `per-document columns`: every other column (the field lengths).
- `other`: the compound files' directories, the tables of contents.
"""

from __future__ import annotations

import io
import pickle
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from archiver_plugins.index import postblocks, terminfo
from archiver_plugins.index.blocks import Codec, CompactTermsReader
from whoosh.codec.whoosh3 import W3TermInfo
from whoosh.filedb.filestore import FileStorage
from whoosh.system import _INT_SIZE, unpack_int

PARTS = (
    "term dictionary",
    "postings: ids+weights",
    "positions",
    "block headers",
    "stored: text (excerpt)",
    "stored: other fields",
    "per-document columns",
    "other",
)
CROSS = ("uncompressed blocks",)
_FORMATS: dict[str, Any] = {}
"""The formats of the fields of the index being measured."""


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def breakdown(whoosh_folder: Path) -> tuple[Counter[str], Counter[str], int]:
    """(bytes by part, bytes of the postings and dictionary by field, documents)."""
    parts: Counter[str] = Counter()
    fields: Counter[str] = Counter()
    storage = FileStorage(str(whoosh_folder), supports_mmap=False)
    ix = storage.open_index("MAIN")
    total = folder_bytes(whoosh_folder)
    documents = 0
    _FORMATS.clear()
    _FORMATS.update({name: ix.schema[name].format for name in ix.schema.names()})
    try:
        for segment in ix._segments():
            documents += segment.doc_count_all()
            _segment(storage, segment, ix.schema, parts, fields)
    finally:
        ix.close()
    parts["other"] += total - sum(parts[name] for name in PARTS)
    return parts, fields, documents


def _segment(storage: Any, segment: Any, schema: Any, parts: Counter[str], fields: Counter[str]) -> None:
    codec = segment.codec()
    compound = segment.open_compound_file(storage) if segment.is_compound() else storage
    try:
        terms = codec.terms_reader(compound, segment)
        try:
            _terms(terms, parts, fields)
        finally:
            terms.close()
        for name, info in getattr(compound, "_dir", {}).items():
            if name.endswith("._stored.col"):
                _stored(codec, compound, segment, info["length"], parts)
            elif name.endswith((".trm", Codec.TERMS_EXT)):
                parts["term dictionary"] += info["length"]
            elif name.endswith(".col"):
                parts["per-document columns"] += info["length"]
    finally:
        compound.close()


def _terms(terms: Any, parts: Counter[str], fields: Counter[str]) -> None:
    if isinstance(terms, CompactTermsReader):
        _compact_terms(terms, parts, fields)
        return
    postfile = terms._postfile
    for key, value in terms._tindex.items():
        name = terms._fieldunmap[int.from_bytes(key[:2], "big")]
        fields[f"{name}: dictionary"] += len(key) + len(value) + 8  # and the pair's lengths
        info = W3TermInfo.from_bytes(value)
        if info.is_inlined():
            continue
        offset, length = info.extent()
        if isinstance(length, tuple):  # whoosh's `from_bytes` keeps the length as unpacked
            (length,) = length
        data = postfile.get(offset, length)
        fields[f"{name}: postings"] += length
        _blocks(data, parts)


def _compact_terms(terms: Any, parts: Counter[str], fields: Counter[str]) -> None:
    """`_terms` of a segment of the compact codec (`blocks.Codec`)."""
    postfile = terms._postfile
    for key, value in terms._tindex.items():
        name = terms._fieldunmap[int.from_bytes(key[:2], "big")]
        extent = terminfo.read_extent(value)
        if extent is None:
            continue
        offset, length = extent
        fields[f"{name}: postings"] += length
        raw = postfile.get(offset, length)
        format_ = _FORMATS.get(name)
        at = previous = 0
        while at < length:
            head, start, size = postblocks.decode_head(raw, at, previous)
            parts["block headers"] += start - at
            data = postblocks.Data(head, raw[start : start + size], format_)
            share = data.values_at / max(data.size, 1)
            if data.kind == postblocks.COUNTS:
                share = 1.0
            parts["postings: ids+weights"] += round(size * share)
            parts["positions"] += size - round(size * share)
            if not head["head"] & postblocks.COMPRESSED:
                parts["uncompressed blocks"] += start - at + size
            previous, at = head["maxid"], start + size


def _blocks(data: bytes, parts: Counter[str]) -> None:
    """Share one term's postings (whoosh 3's blocks, after a 4-byte header) between parts."""
    at = 4
    parts["block headers"] += 4
    while at < len(data):
        signed = unpack_int(data[at : at + _INT_SIZE])[0]
        length = abs(signed)
        body = data[at + _INT_SIZE : at + _INT_SIZE + length]
        stream = io.BytesIO(body)
        info = pickle.load(stream)
        head = stream.tell()
        raw = body[head:]
        compression = info[3]
        plain = zlib.decompress(raw) if compression else raw
        ids, weights, _ = pickle.loads(plain)
        bare = len(pickle.dumps((ids, weights, None), 3))
        share = bare / max(len(plain), 1)
        parts["block headers"] += _INT_SIZE + head
        parts["postings: ids+weights"] += round(len(raw) * share)
        parts["positions"] += len(raw) - round(len(raw) * share)
        if not compression:
            parts["uncompressed blocks"] += _INT_SIZE + length
        at += _INT_SIZE + length
        if signed < 0:
            break


def _stored(codec: Any, storage: Any, segment: Any, length: int, parts: Counter[str]) -> None:
    reader = codec.per_document_reader(storage, segment)
    try:
        excerpt = other = 0
        for docnum in range(segment.doc_count_all()):
            fields = reader.stored_fields(docnum)
            kept = fields.get("excerpt")
            size = len(zlib.compress(pickle.dumps(fields, 3), 1))
            if isinstance(kept, tuple):  # (the start of the text, compressed; its whole length)
                kept = kept[0]
            part = len(kept) if isinstance(kept, bytes) else 0
            excerpt += part
            other += size - part
    finally:
        reader.close()
    if excerpt + other:
        parts["stored: text (excerpt)"] += round(length * excerpt / (excerpt + other))
        parts["stored: other fields"] += length - round(length * excerpt / (excerpt + other))
