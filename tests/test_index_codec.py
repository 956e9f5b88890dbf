"""The compact codec: its term file, term infos and posting blocks read back what was
written, and an index written in whoosh 3's format before it (`tests/data/index-whoosh3`,
two segments written by the previous release's `SegmentBuilder` from `fixture_captures`)
still opens, searches like new segments of the same pages, merges with them and is rebuilt
by `reindex`.  (Searches of new and whoosh 3 segments of the same pages, posting by posting
and query by query, are compared in `test_index_builder.py`.)"""

from __future__ import annotations

import itertools
import random
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.index import postblocks, terminfo
from archiver_plugins.index.blocks import Codec, CompactTermsReader
from archiver_plugins.index.positions import compact_positions
from archiver_plugins.index.reindex import reindex
from archiver_plugins.index.search import close_all, search
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import create_index, make_document, whoosh_dir
from archiver_plugins.index.termfile import TermFileError, TermFileReader, TermFileWriter
from archiver_plugins.index.tiers import merge_segments
from whoosh.codec.whoosh3 import W3Codec, W3TermInfo
from whoosh.filedb.filestore import FileStorage
from whoosh.formats import Characters, Existence, Frequency, Positions
from whoosh.index import FileIndex

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from codec_pages import URL, fixture_captures
from warc_pages import write_warc

FIXTURE = Path(__file__).parent / "data" / "index-whoosh3"


QUERIES = [
    "queue",
    "event loop",
    '"event loop"',
    '"loop far away"',
    '"echo echo"',
    "event AND loop NOT queue",
    "title:echo",
    "asyn*",
    "中文搜索",
    '"中文搜索"',
    "天気",
    "café",
    "asyncio.run",
    "filler",
]


def _storage(folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    return FileStorage(str(folder))


def _write_terms(folder: Path, pairs: list[tuple[bytes, bytes]]) -> int:
    writer = TermFileWriter(_storage(folder).create_file("t.ctd"))
    writer.extras["fieldmap"] = {"text": 0}
    try:
        for key, value in pairs:
            writer.add(key, value)
    except ValueError:
        writer.dbfile.close()
        raise
    writer.close()
    return int((folder / "t.ctd").stat().st_size)


def test_the_term_file_reads_back_every_term_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("archiver_plugins.index.termfile.CACHED_BLOCKS", 2)
    rng = random.Random(7)
    keys = {b"", b"\x00", b"\xff" * 3, "naïve".encode(), "中文搜索".encode(), b"k" * 100_000, b"k" * 100_001}
    keys |= {f"term{n:05d}".encode() for n in range(0, 3000, 3)}
    keys |= {"".join(rng.choice("abcé中") for _ in range(rng.randint(1, 12))).encode() for _ in range(800)}
    pairs = [(key, rng.randbytes(rng.choice((0, 1, 5, 40, 300)))) for key in sorted(keys)]
    size = _write_terms(tmp_path, pairs)
    storage = FileStorage(str(tmp_path))
    reader = TermFileReader(storage.open_file("t.ctd"), size)
    try:
        assert reader.extras == {"fieldmap": {"text": 0}}
        assert list(reader.items()) == pairs
        for at, (key, value) in enumerate(pairs):
            assert reader.get(key) == value and key in reader
            assert list(reader.items_from(key)) == pairs[at:]
            following = pairs[at + 1] if at + 1 < len(pairs) else None
            assert next(reader.items_from(key + b"\x00"), None) == following
            absent = key + b"\x00"
            if at + 1 == len(pairs) or pairs[at + 1][0] != absent:
                assert reader.get(absent) is None and absent not in reader
        assert list(reader.items_from(b"")) == pairs
        assert list(reader.items_from(b"\xff" * 4)) == []
    finally:
        reader.close()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "t.ctd").write_bytes((tmp_path / "t.ctd").read_bytes()[:-7])
    with pytest.raises(TermFileError):
        TermFileReader(FileStorage(str(cut)).open_file("t.ctd"), size - 7)
    with pytest.raises(ValueError, match="increase"):
        _write_terms(tmp_path / "unsorted", [(b"b", b""), (b"a", b"")])


def test_an_empty_term_file_has_no_terms(tmp_path: Path) -> None:
    size = _write_terms(tmp_path, [])
    reader = TermFileReader(FileStorage(str(tmp_path)).open_file("t.ctd"), size)
    assert list(reader.items()) == [] and reader.get(b"a") is None and list(reader.items_from(b"")) == []
    reader.close()


def _stats(info: Any) -> tuple[Any, ...]:
    return (info.weight(), info.doc_frequency(), info.min_length(), info.max_length(), info.max_weight(),
            info.min_id(), info.max_id(), info.is_inlined() and info.inlined_postings(),
            not info.is_inlined() and tuple(int(n) for n in (info._offset, info._length)))  # fmt: skip


@pytest.mark.parametrize(
    "fields",
    [
        (3.0, 2, 5, 200, 2.0, 4, 90, (12, 300), None),
        (2.5, 2, 0, 0, 1.25, 0, 1, (2**40, 2**31 - 1), None),
        (float(2**25), 3, 1, 2, float(2**25), 7, 2**32 - 2, (0, 10), None),
        (1.0, 1, 9, 9, 1.0, 17, 17, None, ((17,), None, (b"\x00\x00\x00\x01]K\x05a",))),
        (1.0, 1, 9, 9, 1.0, 17, 17, None, ((17,), None, (None,))),
        (2.5, 1, 9, 9, 2.5, 3, 3, None, ((3,), (2.5,), (b"x",))),
        (2.0, 2, 3, 4, 1.0, 3, 8, None, ((3, 8), (1.0, 1.0), (b"a", b"b"))),
        (0.0, 0, 0, 0, 0.0, None, None, (5, 6), None),
    ],
)
def test_term_infos_read_back_as_whooshs_own(fields: tuple[Any, ...]) -> None:
    from whoosh.util.numeric import byte_to_length

    weight, df, small, big, top, first, last, extent, inlined = fields
    stock = W3TermInfo(weight, df, byte_to_length(small), byte_to_length(big), top, first, last)
    if inlined is None:
        stock.set_extent(*extent)
    else:
        stock._inlined = inlined
    stock = W3TermInfo.from_bytes(stock.to_bytes())
    if inlined is None:
        stock._length = stock._length[0]  # whoosh reads it back as struct.unpack's tuple
    data = terminfo.encode(weight, df, small, big, top, first, last, extent, inlined)
    assert _stats(terminfo.decode(data)) == _stats(stock)
    assert terminfo.doc_frequency(data) == df
    assert terminfo.decode(terminfo.from_whoosh(stock)).__dict__ == terminfo.decode(data).__dict__
    assert len(data) < len(stock.to_bytes())


def _positions(poses: list[int]) -> bytes:
    return compact_positions(len(poses), [b - a for a, b in zip([0, *poses], poses, strict=False)])


@pytest.mark.parametrize(
    ("format_", "make"),
    [
        (Positions(), lambda n: _positions([n % 7, 300 + n, 70_000 + n, 2**31 + n][: 1 + n % 4])),
        (Frequency(), lambda n: (1 + n % 5).to_bytes(4, "big")),
        (Existence(), lambda n: b""),
        (Characters(), lambda n: None if n % 3 == 0 else bytes([n % 256]) * (n % 4)),
    ],
)
@pytest.mark.parametrize("weighing", ["one", "counts", "whole", "fraction"])
def test_posting_blocks_read_back_what_was_written(format_: Any, make: Any, weighing: str) -> None:
    encoder = postblocks.Encoder(format_, 1)
    ids = [3, 4, 9, 1000, 70_000, 2**31]
    values = [make(n) for n in range(len(ids))]
    if weighing == "one":
        weights = [1.0] * len(ids)
    elif weighing == "counts" and type(format_) in (Positions, Frequency):
        weights = [float(format_.decode_frequency(value)) for value in values]
    elif weighing == "fraction":
        weights = [0.5 + n for n in range(len(ids))]
    else:
        weights = [float(2 + n * 1000) for n in range(len(ids))]
    raw = encoder.block(ids[:3], weights[:3], values[:3], 0, 4, 9)
    raw += encoder.block(ids[3:], weights[3:], values[3:], ids[2], 0, 200)
    found: list[Any] = []
    at = previous = 0
    while at < len(raw):
        head, start, size = postblocks.decode_head(raw, at, previous)
        data = postblocks.Data(head, raw[start : start + size], format_)
        found.append((head["count"], head["maxid"], head["maxweight"], head["small"], head["big"]))
        found.append((data.ids, list(data.weights), data.values()))
        previous, at = head["maxid"], start + size

    def decoded(value: Any) -> Any:
        if type(format_) in (Positions, Frequency):
            return format_.decode_as("positions" if type(format_) is Positions else "frequency", value)
        return None if isinstance(format_, Existence) else value

    assert found[0] == (3, 9, max(weights[:3]), 4, 9)
    assert found[2] == (3, 2**31, max(weights[3:]), 0, 200)
    assert found[1][0] + found[3][0] == tuple(ids)
    assert found[1][1] + found[3][1] == weights
    assert [decoded(v) for v in found[1][2] + found[3][2]] == [decoded(v) for v in values]


def _fixture_copy(tmp_path: Path) -> Path:
    archive = tmp_path / "old"
    shutil.copytree(FIXTURE, whoosh_dir(archive))
    write_warc(archive, fixture_captures())
    return archive


def _build(archive: Path, parts: list[list[dict[str, Any]]]) -> Any:
    folder = whoosh_dir(archive)
    folder.mkdir(parents=True)
    ix = create_index(folder)
    for part in parts:
        writer = SegmentBuilder(ix)
        for doc in part:
            writer.add_document(**doc)
        writer.commit(merge=False)
    write_warc(archive, fixture_captures())
    return FileIndex(ix.storage, ix.schema, ix.indexname)


def _found(archive: Path) -> list[Any]:
    try:
        found = [search(archive, query, limit=10, with_snippets=False) for query in QUERIES]
        return [[(hit.url, round(hit.score, 4)) for hit in result.hits] for result in found]
    finally:
        close_all()


def _codecs(archive: Path) -> list[type]:
    ix = FileIndex(FileStorage(str(whoosh_dir(archive))), indexname="MAIN")
    return [type(segment.codec()) for segment in ix._segments()]


def test_an_index_in_whoosh3s_format_searches_and_merges_with_new_segments(tmp_path: Path) -> None:
    docs = [make_document(capture, max_chars=1_000_000) for capture in fixture_captures()]
    old = _fixture_copy(tmp_path)
    assert _codecs(old) == [W3Codec, W3Codec]
    new = tmp_path / "new"
    _build(new, [docs[:5], docs[5:]])
    assert _codecs(new) == [Codec, Codec]
    expected = _found(new)
    assert all(expected) and expected[QUERIES.index('"loop far away"')][0][0] == URL + "far"
    assert _found(old) == expected
    extra = [{**doc, "url": doc["url"] + "?again"} for doc in docs[::5]]
    added: dict[str, list[Any]] = {}
    merged: dict[str, list[Any]] = {}
    for archive in (old, new):
        ix = FileIndex(FileStorage(str(whoosh_dir(archive))), indexname="MAIN")
        writer = SegmentBuilder(ix)
        for doc in extra:
            writer.add_document(**doc)
        writer.commit(merge=False)
        assert len(_codecs(archive)) == 3
        added[archive.name] = _found(archive)
        ix = FileIndex(FileStorage(str(whoosh_dir(archive))), indexname="MAIN")
        writer = ix.writer()
        segment = merge_segments(writer, ix._segments())
        writer._close_segment()
        writer._commit_toc([segment])
        writer._finish()
        assert _codecs(archive) == [Codec]
        merged[archive.name] = _found(archive)
    assert added["old"] == added["new"]
    assert merged["old"] == merged["new"]
    ix = FileIndex(FileStorage(str(whoosh_dir(old))), indexname="MAIN")
    with ix.reader() as reader:
        assert isinstance(reader._terms, CompactTermsReader)
        assert reader.doc_count() == len(docs) + len(extra)


def test_reindex_rewrites_an_index_in_whoosh3s_format(tmp_path: Path) -> None:
    old = _fixture_copy(tmp_path)
    before = _found(old)
    stats = reindex(old)
    assert stats.indexed == len(fixture_captures())
    assert _codecs(old) == [Codec]
    assert _found(old) == before
    sizes = sum(f.stat().st_size for f in whoosh_dir(old).iterdir())
    assert sizes < 0.6 * sum(f.stat().st_size for f in FIXTURE.iterdir())


def test_a_schema_with_term_vectors_takes_whooshs_path_into_the_compact_files(tmp_path: Path) -> None:
    """`SegmentBuilder` sends such a schema's postings through whoosh's pool and the field
    writer's `start_term`/`add`/`finish_term`: the same postings as whoosh's writer."""
    from test_index_builder import contents
    from whoosh.fields import ID, TEXT, Schema
    from whoosh.writing import SegmentWriter

    schema = Schema(url=ID(stored=True, unique=True), body=TEXT(vector=True, stored=True), tag=ID)
    docs = [
        {
            "url": f"u{n}",
            "body": f"event loop {n % 7} queue " * (1 + n % 3) + "naïve 中文",
            "tag": f"t{n % 4}",
        }
        for n in range(300)
    ]
    found = []
    for stock in (True, False):
        folder = tmp_path / ("stock" if stock else "builder")
        folder.mkdir()
        ix = create_index(folder, schema)
        writer = SegmentWriter(ix, codec=W3Codec()) if stock else SegmentBuilder(ix)
        for doc in docs:
            writer.add_document(**doc)
        writer.commit(merge=False)
        ix = FileIndex(ix.storage, ix.schema, ix.indexname)
        assert _codecs_of(ix) == [W3Codec if stock else Codec]
        found.append(contents(ix))
        with ix.searcher() as searcher:
            vector = list(searcher.vector_as("weight", 5, "body"))
            hits = [hit["url"] for hit in searcher.search(_parse(schema, '"loop 5 queue"'), limit=None)]
        found.append((vector, hits))
    assert found[2] == found[0]
    assert found[3] == found[1] and found[1][1]


def _codecs_of(ix: Any) -> list[type]:
    return [type(segment.codec()) for segment in ix._segments()]


def _parse(schema: Any, text: str) -> Any:
    from whoosh.qparser import QueryParser

    return QueryParser("body", schema).parse(text)


def test_term_walks_and_lookups_match_whooshs_term_file(tmp_path: Path) -> None:
    """Prefix walks (`terms_from`, `expand_prefix`, `iter_from`), lexicons, cursors and
    look-ups of absent terms give what whoosh's own term file gives, at field boundaries
    and between any two terms."""
    from whoosh.writing import SegmentWriter

    docs = [make_document(capture, max_chars=1_000_000) for capture in fixture_captures()]
    readers = []
    for stock in (True, False):
        folder = tmp_path / ("stock" if stock else "compact")
        folder.mkdir()
        ix = create_index(folder)
        writer = SegmentWriter(ix, codec=W3Codec()) if stock else SegmentBuilder(ix)
        for doc in docs:
            writer.add_document(**doc)
        writer.commit(merge=False)
        readers.append(FileIndex(ix.storage, ix.schema, ix.indexname).reader())
    stock_reader, compact = readers
    try:
        assert isinstance(compact._terms, CompactTermsReader)
        terms = list(stock_reader.all_terms())
        assert list(compact.all_terms()) == terms
        fields = sorted({field for field, _ in terms})
        probes = {text[:cut] for _, text in terms[::7] for cut in (0, 1, 2, len(text))}
        probes |= {text + b"\x00" for _, text in terms[::11]} | {b"\xff", b"zzzz"}
        for field in fields:
            assert list(compact.lexicon(field)) == list(stock_reader.lexicon(field))
            for probe in sorted(probes):
                expanded = list(stock_reader.expand_prefix(field, probe))
                assert list(compact.expand_prefix(field, probe)) == expanded
                assert list(itertools.islice(compact.terms_from(field, probe), 5)) == list(
                    itertools.islice(stock_reader.terms_from(field, probe), 5)
                )
                assert [term for term, _ in itertools.islice(compact.iter_from(field, probe), 5)] == [
                    term for term, _ in itertools.islice(stock_reader.iter_from(field, probe), 5)
                ]
                assert compact.doc_frequency(field, probe) == stock_reader.doc_frequency(field, probe)
                assert compact.frequency(field, probe) == stock_reader.frequency(field, probe)
                assert ((field, probe) in compact) is ((field, probe) in stock_reader)
            cursors = [reader._terms.cursor(field, compact.schema[field]) for reader in readers]
            walked: list[list[Any]] = [[], []]
            for cursor, seen in zip(cursors, walked, strict=True):
                while cursor.is_valid():
                    seen.append((cursor.text(), cursor.term_info().doc_frequency()))
                    cursor.next()
            assert walked[0] == walked[1]
    finally:
        for reader in readers:
            reader.close()


@pytest.mark.parametrize("where", ["trailer", "first block"])
def test_a_damaged_compact_term_file_is_reported_as_a_damaged_index(tmp_path: Path, where: str) -> None:
    from archiver_plugins.index.store import DamagedIndexError
    from archiver_plugins.index.termfile import MAGIC

    docs = [make_document(capture, max_chars=1_000_000) for capture in fixture_captures()]
    archive = tmp_path / "archive"
    _build(archive, [docs])
    assert _found(archive)[0]
    (segment,) = whoosh_dir(archive).glob("*.seg")
    data = bytearray(segment.read_bytes())
    at = data.rindex(MAGIC) if where == "trailer" else data.index(MAGIC) + len(MAGIC) + 2
    data[at : at + 4] = b"\xff\x00\xff\x00"
    segment.write_bytes(bytes(data))
    try:
        with pytest.raises(DamagedIndexError, match="archiver reindex") as raised:
            search(archive, "queue", with_snippets=False)
        assert isinstance(raised.value.__cause__, TermFileError if where == "trailer" else zlib.error)
    finally:
        close_all()


@pytest.mark.parametrize(
    "poses",
    [[0], [5], [255], [256], [3, 9, 300], [65_535], [65_536], [70_000, 2**31], list(range(0, 6_000, 3))],
)
def test_packed_positions_read_back_in_the_fewest_bytes_a_gap(poses: list[int]) -> None:
    from archiver_plugins.index.positions import from_whoosh, gaps, pack, size, split, to_whoosh

    deltas = [b - a for a, b in zip([0, *poses], poses, strict=False)]
    packed = pack(len(poses), deltas)
    assert type(packed) is bytes
    head, body = split(packed)
    assert head >> 2 == len(poses) and size(head) == len(body)
    assert gaps(body, head) == deltas
    width = 1 if max(deltas) < 256 else 2 if max(deltas) < 65_536 else 4
    assert len(body) == width * len(poses)
    assert Positions().decode_positions(to_whoosh(packed)) == poses
    assert from_whoosh(to_whoosh(packed)) == packed
    assert from_whoosh(_positions(poses)) == packed


@pytest.mark.parametrize("seed", range(5))
def test_varints_read_back_among_long_and_short_numbers(seed: int) -> None:
    """`get_many` takes the one-byte numbers between longer ones in slices: every number
    and where the next item starts come back, whatever the mix."""
    from archiver_plugins.index.varint import get_many, put_many

    rng = random.Random(seed)
    for _ in range(400):
        numbers = [
            rng.randrange(0x80) if rng.random() < 0.7 else rng.randrange(1 << rng.randrange(7, 40))
            for _ in range(rng.randrange(60))
        ]
        data = bytearray(b"\x81\x01")
        put_many(data, numbers)
        data += b"\xff\x7f"  # a long number after them
        assert get_many(bytes(data), 2, len(numbers)) == (numbers, len(data) - 2)
