"""`SegmentBuilder` writes, in the compact codec's files, what whoosh's own writer writes:
read back through whoosh's readers, every field, term, posting block, length and stored
field is the same, and so are searches, snippets, suggestions, replaced pages and tiered
merges."""

from __future__ import annotations

import io
import itertools
import pickle
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.index import postblocks, tiers
from archiver_plugins.index.blocks import Codec, CompactTermsReader
from archiver_plugins.index.search import close_all, search
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import Capture, create_index, make_document, whoosh_dir
from archiver_plugins.index.tiers import merge_segments
from whoosh.codec.whoosh3 import W3Codec
from whoosh.index import FileIndex
from whoosh.reading import SegmentReader
from whoosh.writing import SegmentWriter

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from index_pages import pages as bench_pages
from warc_pages import write_warc

URL = "http://example.test/"


def page(path: str, body: str, title: str = "") -> Capture:
    html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    return Capture(URL + path, "20240501120000", 200, "text/html", "utf-8", html.encode())


def captures() -> list[Capture]:
    """Bench pages (one in twenty in Chinese; frequent words with posting lists of more than
    one block) and the odd ones: Japanese and Chinese text, repeated words, empty fields,
    a page past whoosh's largest length byte, stop words alone."""
    return [
        *(Capture(url, "20240501120000", 200, "text/html", "utf-8", body) for url, body in bench_pages(160)),
        page(
            "ja",
            "<h1>東京の天気</h1><p>今日は晴れです。明日は雨が降るでしょう。ひらがなとカタカナ。</p>",
            "日本語",
        ),
        page("zh", "<h1>中文搜索</h1><p>中文搜索引擎的索引。我们在这里测试中文分词。</p>", "中文"),
        page("repeat", "<p>" + "echo " * 3000 + "queue queue event" + "</p>", "echo echo"),
        page("empty", ""),
        page("stops", "<p>the of and to in is it</p>", "the"),
        page("huge", "<p>" + " ".join(f"w{n % 5000} {n % 10}" for n in range(60_000)) + "</p>", "huge"),
        page("mixed", "<p>asyncio.run() 3.14 naïve café Straße ﬁle İstanbul</p>", "Mixed"),
    ]


def documents() -> list[dict[str, Any]]:
    """The documents of `captures`, and another field type's value."""
    found = [make_document(capture, max_chars=1_000_000) for capture in captures()]
    found.append({**found[0], "url": URL + "dict", "status": 404, "title": None, "site": ""})
    return found


def build(folder: Path, docs: list[dict[str, Any]], stock: bool) -> Any:
    """One segment with `docs`, by whoosh's writer or by `SegmentBuilder`."""
    folder.mkdir(parents=True)
    ix = create_index(folder)
    writer = SegmentWriter(ix, codec=W3Codec()) if stock else SegmentBuilder(ix, memory_mb=1024)
    for doc in docs:
        writer.add_document(**doc)
    writer.commit(merge=False)
    return FileIndex(ix.storage, ix.schema, ix.indexname)


def blocks(reader: Any, fieldname: str, text: bytes) -> list[tuple[Any, Any]]:
    """A term's posting blocks as stored, whoosh 3's or the compact codec's: (block info,
    the block's ids, weights and values; positions decoded, weights and values as the
    matcher reads them).  A term of one posting is inlined in its term info by
    `SegmentBuilder` (whoosh's writer gives it a block): its posting and statistics are
    compared, not where they are kept."""
    fmt = reader.schema[fieldname].format
    terms = reader._terms
    info = terms.term_info(fieldname, text)
    if info.doc_frequency() == 1:
        return []
    assert not info.is_inlined()
    offset, length = info.extent()
    if isinstance(length, tuple):  # whoosh reads it back as struct.unpack's tuple
        (length,) = length
    raw = terms._postfile.get(offset, length)
    found = []
    if isinstance(terms, CompactTermsReader):
        at = previous = 0
        while at < length:
            head, start, size = postblocks.decode_head(raw, at, previous)
            data = postblocks.Data(head, raw[start : start + size], fmt)
            stats = (head["count"], head["maxid"], head["maxweight"], head["small"], head["big"])
            found.append((stats, _normal(fmt, data.ids, data.weights, data.values())))
            previous, at = head["maxid"], start + size
        return found
    assert raw[:4] == b"W3Bl"
    stream = io.BytesIO(raw[4:])
    while True:
        (size,) = struct.unpack("!i", stream.read(4))
        block = stream.read(abs(size))
        inner = io.BytesIO(block)
        head = pickle.load(inner)
        data = inner.read()
        if head[3]:
            data = zlib.decompress(data)
        deltas, weights, values = pickle.loads(data)
        ids = tuple(itertools.accumulate(deltas))
        if weights is None or isinstance(weights, float):
            weights = (1.0 if weights is None else weights,) * len(ids)
        fixed = fmt.fixed_value_size()
        if fixed == 0:
            values = (None,) * len(ids)
        elif fixed and fixed > 0:
            values = tuple(values[i : i + fixed] for i in range(0, len(values), fixed))
        found.append(((*head[:3], *head[4:]), _normal(fmt, ids, weights, values)))
        if size < 0:
            break
    assert not stream.read()
    return found


def _normal(fmt: Any, ids: Any, weights: Any, values: Any) -> tuple[Any, ...]:
    if hasattr(fmt, "decode_positions") and values:
        values = tuple(fmt.decode_positions(value) for value in values)
    return tuple(ids), tuple(map(float, weights)), tuple(values or ())


def term_stats(info: Any) -> tuple[Any, ...]:
    return (info.weight(), info.doc_frequency(), info.min_length(), info.max_length(),
            info.max_weight(), info.min_id(), info.max_id())  # fmt: skip


def contents(ix: Any) -> dict[str, Any]:
    """Everything a reader gives back, posting by posting."""
    with ix.reader() as reader:
        assert reader.is_atomic()
        schema = ix.schema
        terms: dict[Any, Any] = {}
        for fieldname, text in reader.all_terms():
            fmt = schema[fieldname].format
            postings = []
            matcher = reader.postings(fieldname, text)
            while matcher.is_active():
                value = matcher.value()
                decoded = fmt.decode_positions(value) if hasattr(fmt, "decode_positions") else None
                if decoded is not None:
                    value = fmt.decode_frequency(value)  # the positions' bytes differ, not what they say
                postings.append((matcher.id(), matcher.weight(), value, decoded))
                matcher.next()
            terms[fieldname, text] = (
                term_stats(reader.term_info(fieldname, text)),
                reader.doc_frequency(fieldname, text),
                reader.frequency(fieldname, text),
                postings,
                blocks(reader, fieldname, text),
            )
        docs = range(reader.doc_count_all())
        names = schema.names()
        return {
            "terms": terms,
            "fields": sorted(reader.indexed_field_names()),
            "stored": [reader.stored_fields(d) for d in docs],
            "lengths": [[reader.doc_field_length(d, n) for n in names] for d in docs],
            "totals": [
                (reader.field_length(n), reader.min_field_length(n), reader.max_field_length(n))
                for n in names
                if schema[n].scorable
            ],
            "count": reader.doc_count_all(),
        }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("built")
    docs = documents()
    build(whoosh_dir(root / "stock"), docs, stock=True)
    build(whoosh_dir(root / "builder"), docs, stock=False)
    for name in ("stock", "builder"):
        write_warc(root / name, captures())
    return root / "stock", root / "builder"


def test_every_posting_block_length_and_stored_field_is_whooshs(built: tuple[Path, Path]) -> None:
    stock, builder = (_open(archive) for archive in built)
    assert builder["fields"] == stock["fields"]
    assert builder["count"] == stock["count"]
    assert builder["stored"] == stock["stored"]
    assert builder["lengths"] == stock["lengths"]
    assert builder["totals"] == stock["totals"]
    assert builder["terms"].keys() == stock["terms"].keys()
    for key, held in stock["terms"].items():
        assert builder["terms"][key] == held, key
    by_length = [len(held[3]) for held in stock["terms"].values()]
    assert max(by_length) > 128  # terms of several blocks
    assert any(held[4] and len(held[4][0][1][2] or ()) > 1 for held in stock["terms"].values())
    assert any(key[0] == "text" and not key[1].isascii() for key in stock["terms"])  # CJK bigrams
    assert any(len(held[3]) == 1 for held in stock["terms"].values())  # terms of one posting


def test_blocks_are_compressed_and_single_postings_inlined(built: tuple[Path, Path]) -> None:
    """What makes the builder's segment smaller than whoosh's."""
    from whoosh import index

    sizes = [sum(f.stat().st_size for f in whoosh_dir(archive).iterdir()) for archive in built]
    ix = index.open_dir(str(whoosh_dir(built[1])))
    with ix.reader() as reader:
        infos = [(reader.term_info(f, t), f, t) for f, t in reader.all_terms()]
        assert all(info.is_inlined() for info, _, _ in infos if info.doc_frequency() == 1)
        heads = [head for info, f, t in infos if info.doc_frequency() > 1 for head in _heads(reader, f, t)]
    flags = [head & postblocks.COMPRESSED for head in heads]
    assert 0 < flags.count(0) < len(flags)  # compressed where it makes a block smaller
    modes = {head & postblocks.WEIGHTS_MASK for head in heads}
    assert {postblocks.WEIGHTS_ONE, postblocks.WEIGHTS_COUNTS} <= modes  # weights not kept twice
    assert sizes[1] < 0.4 * sizes[0]


def _heads(reader: Any, fieldname: str, text: bytes) -> list[int]:
    """Each of the term's compact blocks' head byte."""
    terms = reader._terms
    offset, length = terms.term_info(fieldname, text).extent()
    raw = terms._postfile.get(offset, length)
    found = []
    at = previous = 0
    while at < length:
        head, start, size = postblocks.decode_head(raw, at, previous)
        found.append(head["head"])
        previous, at = head["maxid"], start + size
    return found


def _open(archive: Path) -> dict[str, Any]:
    from whoosh import index

    return contents(index.open_dir(str(whoosh_dir(archive))))


QUERIES = [
    "queue",
    "event loop",
    '"event loop"',
    '"echo echo"',
    "async AND server NOT client",
    "title:queue",
    "site:example.test echo",
    "asyn*",
    "中文搜索",
    '"中文搜索"',
    "天気",
    "ひらがな",
    "café",
    "asyncio.run",
    "w4999",
    "quue",
    "evnt lop",
]


def test_searches_snippets_and_suggestions_are_the_same(built: tuple[Path, Path]) -> None:
    stock, builder = built
    try:
        for query in QUERIES:
            one = search(stock, query, limit=10, with_snippets=True)
            two = search(builder, query, limit=10, with_snippets=True)
            assert [(h.url, round(h.score, 5), h.snippet, h.title) for h in two.hits] == [
                (h.url, round(h.score, 5), h.snippet, h.title) for h in one.hits
            ], query
            assert (two.total, two.suggestion) == (one.total, one.suggestion), query
        assert search(builder, "queue").total > 10
        assert search(builder, '"event loop"').hits
        assert search(builder, "quue").suggestion == "queue"
        assert "<b" in search(builder, "echo").hits[0].snippet
    finally:
        close_all()


def test_replaced_pages_and_tiered_merges_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiers, "CHUNK", 100)  # term index records cut across reads
    docs = documents()[:120]
    changed = [{**doc, "text": doc["text"] + " replaced", "title": "new"} for doc in docs[::7]]
    folders = {}
    for stock in (True, False):
        folder = whoosh_dir(tmp_path / ("stock" if stock else "builder"))
        folder.mkdir(parents=True)
        ix = create_index(folder)
        for part in (docs[:60], docs[60:], changed):
            writer = SegmentWriter(ix, codec=W3Codec()) if stock else SegmentBuilder(ix)
            for doc in part:
                writer.update_document(**doc)
            writer.commit(merge=False)
        ix = FileIndex(ix.storage, ix.schema, ix.indexname)
        with ix.searcher() as searcher:
            assert searcher.doc_count() == len(docs)
            assert {hit["url"] for hit in searcher.documents(title="new")} == {d["url"] for d in changed}
            for doc in changed:
                assert [hit["title"] for hit in searcher.documents(url=doc["url"])] == ["new"]
        if stock:  # whoosh's own merge, through its writer's pool
            SegmentWriter(ix, codec=W3Codec()).commit(optimize=True)
        else:
            writer = ix.writer()
            merged = merge_segments(writer, ix._segments())
            writer._close_segment()
            writer._commit_toc([merged])
            writer._finish()
        folders[stock] = folder.parent.parent
    stock_contents, builder_contents = _open(folders[True]), _open(folders[False])
    assert builder_contents["count"] == stock_contents["count"] == len(docs)
    assert builder_contents["stored"] == stock_contents["stored"]
    assert builder_contents["lengths"] == stock_contents["lengths"]
    assert builder_contents["terms"] == stock_contents["terms"]
    try:
        for query in ("replaced", "queue", '"event loop"', "title:new"):
            assert [h.url for h in search(folders[False], query).hits] == [
                h.url for h in search(folders[True], query).hits
            ]
    finally:
        close_all()


def test_a_segment_names_the_codec_that_reads_it(built: tuple[Path, Path]) -> None:
    """whoosh's `open_dir` finds the compact codec in the segment it opens; the segment
    written by whoosh's writer names whoosh's codec."""
    from whoosh import index

    for archive, codec in zip(built, (W3Codec, Codec), strict=True):
        ix = index.open_dir(str(whoosh_dir(archive)))
        (segment,) = ix._segments()
        assert type(segment.codec()) is codec
        reader = SegmentReader(ix.storage, ix.schema, segment)
        try:
            assert reader.doc_count() == len(documents())
            assert isinstance(reader._terms, CompactTermsReader) is (codec is Codec)
        finally:
            reader.close()


def test_positions_take_fewer_bytes_and_whoosh_decodes_them() -> None:
    from pickle import dumps

    from archiver_plugins.index.positions import compact_positions
    from whoosh.formats import Positions
    from whoosh.system import pack_uint

    for poses in ([0], [5], [3, 9, 300], [70_000], list(range(0, 6_000, 3))):
        deltas = [b - a for a, b in zip([0, *poses], poses, strict=False)]
        value = compact_positions(len(poses), deltas)
        assert Positions().decode_positions(value) == poses
        assert Positions().decode_frequency(value) == len(poses)
        assert len(value) < len(pack_uint(len(poses)) + dumps(deltas, 2))


def _merged(folder: Path, parts: list[list[dict[str, Any]]], replaced: list[dict[str, Any]]) -> Path:
    """An archive of `parts` in segments of their own (`replaced` replacing their pages in
    one more), merged into one by `merge_segments`."""
    merged = whoosh_dir(folder)
    merged.mkdir(parents=True)
    ix = create_index(merged)
    for part in [*parts, replaced]:
        writer = SegmentBuilder(ix)
        for doc in part:
            writer.update_document(**doc)
        writer.commit(merge=False)
    ix = FileIndex(ix.storage, ix.schema, ix.indexname)
    writer = ix.writer()
    segment = merge_segments(writer, ix._segments())
    writer._close_segment()
    writer._commit_toc([segment])
    writer._finish()
    return folder


def _fresh(folder: Path, parts: list[list[dict[str, Any]]], replaced: list[dict[str, Any]]) -> Path:
    """An archive of the live pages of `_merged`, in its order, written as one segment."""
    gone = {doc["url"] for doc in replaced}
    build(
        whoosh_dir(folder),
        [doc for part in parts for doc in part if doc["url"] not in gone] + replaced,
        False,
    )
    return folder


def _hits(archive: Path) -> list[list[tuple[str, float]]]:
    try:
        return [
            [(h.url, h.score) for h in search(archive, query, limit=50, with_snippets=False).hits]
            for query in ("replaced", "queue", "event loop", '"event loop"', "title:new", "ba*", "中文")
        ]
    finally:
        close_all()


def _same_index(merged: Path, fresh: Path) -> None:
    """Every posting, block, term statistic, document length and stored field.  Not the
    fields' total lengths: a merge adds up the documents' length bytes, as whoosh's own
    merge does, where a segment written at once adds up the lengths."""
    merged_contents, fresh_contents = _open(merged), _open(fresh)
    assert merged_contents["terms"] == fresh_contents["terms"]
    for part in ("fields", "count", "stored", "lengths"):
        assert merged_contents[part] == fresh_contents[part]


def _pages(count: int) -> list[dict[str, Any]]:
    """The odd pages of `documents`, then `count` bench pages."""
    captures = [
        Capture(url, "20240501120000", 200, "text/html", "utf-8", body) for url, body in bench_pages(count)
    ]
    return [*documents()[160:], *map(make_document, captures)]


def _decoding(*args: Any) -> None:
    raise AssertionError("a posting block decoded one posting at a time")


def test_a_merge_copies_the_sections_of_blocks_and_writes_what_one_segment_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments without deleted documents are merged without decoding any posting of theirs
    (blocks' sections are copied, cut where the merged term's blocks end), and the merged
    segment holds, posting for posting and block for block, what the one segment of the
    same pages holds; searches score the same as after a merge decoding every posting."""
    docs = _pages(300)
    parts = [docs[:100], docs[100:210], docs[210:]]
    with monkeypatch.context() as patched:
        patched.setattr(tiers, "Data", _decoding)
        patched.setattr(tiers, "LISTED_POSTINGS", 50)  # common terms' postings: arrays
        merged = _merged(tmp_path / "merged", parts, [])
    _same_index(merged, _fresh(tmp_path / "fresh", parts, []))
    with monkeypatch.context() as patched:
        patched.setattr(tiers, "_spliced", lambda *args: None)
        decoded = _merged(tmp_path / "decoded", parts, [])
    assert _hits(merged) == _hits(decoded)
    assert sum(map(bool, _hits(merged))) == 5  # all but "replaced", "title:new"


def test_a_merge_of_segments_with_deleted_pages_writes_what_one_segment_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages replaced in a later segment: the blocks holding a deleted page are filtered
    posting by posting from their sections, the others copied, none decoded as a reader
    decodes it; the merged segment holds what the one segment of the live pages holds, and
    searches score as after decoding every posting."""
    docs = _pages(300)
    parts = [docs[:100], docs[100:210], docs[210:]]
    replaced = [{**doc, "text": doc["text"] + " replaced", "title": "new"} for doc in docs[3::23]]
    replaced.append({**docs[4], "text": "", "title": "emptied"})  # its words gone from a segment
    with monkeypatch.context() as patched:
        patched.setattr(tiers, "Data", _decoding)
        merged = _merged(tmp_path / "merged", parts, replaced)
    _same_index(merged, _fresh(tmp_path / "fresh", parts, replaced))
    with monkeypatch.context() as patched:
        patched.setattr(tiers, "_spliced", lambda *args: None)
        decoded = _merged(tmp_path / "decoded", parts, replaced)
    assert _hits(merged) == _hits(decoded)
    assert all(_hits(merged))
