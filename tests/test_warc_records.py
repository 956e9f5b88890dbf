"""Every record type `RecordMaker` builds is one gzip member (ISA-L or zlib) that warcio reads with
its digests checked."""

from __future__ import annotations

import gzip
import io
from datetime import UTC, datetime
from typing import Any

import pytest
from archiver_plugins.warc.records import Original, PageRecords, RecordMaker, Serialized
from warcio.archiveiterator import ArchiveIterator

from archiver.model import Page


def _page(**fields: Any) -> Page:
    body = fields.pop("body", b"<html><body>caf\xc3\xa9 <a href=/b>b</a></body></html>")
    values: dict[str, Any] = {
        "url": "http://127.0.0.1:8080/a?x=1",
        "status": 200,
        "reason": "OK",
        "headers": (("Content-Type", "text/html; charset=utf-8"), ("X-Name", "caf\xc3\xa9")),
        "request_headers": (("Host", "127.0.0.1:8080"), ("User-Agent", "test")),
        "body": body,
        "fetched_at": datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC),
        "peer": "127.0.0.1",
        "depth": 2,
        "referrer": "http://127.0.0.1:8080/",
        "elapsed": 0.012,
        **fields,
    }
    return Page(**values)


def _all_records(maker: RecordMaker) -> list[Serialized]:
    page = _page()
    first = maker.page(page, ["http://127.0.0.1:8080/b page"], {}, dedup=True, metadata=True)
    originals = {first.digest or "": first.original or Original("", "")}
    again = maker.page(_page(url="http://127.0.0.1:8080/c"), [], originals, dedup=True, metadata=True)
    truncated = maker.page(_page(truncated="length", peer=None), [], {}, dedup=True, metadata=False)
    empty = maker.page(_page(body=b"", status=204, reason=""), [], {}, dedup=True, metadata=True)
    stored = Original("http://127.0.0.1:8080/a?x=1", "2024-04-01T00:00:00Z", "<urn:uuid:1>")
    not_modified = maker.page(
        _page(status=304, body=b""),
        [],
        {},
        dedup=True,
        metadata=False,
        not_modified=stored,
        not_modified_digest="sha1:X",
    )
    resources = maker.resources(
        [
            ("urn:dom:http://127.0.0.1:8080/a", "text/html", b"<p>dom</p>"),
            ("urn:screenshot:x", "image/png", b"\x89PNG"),
        ],
        datetime(2024, 5, 1, tzinfo=UTC),
    )
    info = maker.warcinfo("x.warc.gz", [("software", "archiver"), ("root", "http://127.0.0.1:8080/")])
    built: list[PageRecords] = [first, again, truncated, empty, not_modified, resources]
    return [info, *(record for page_records in built for record in page_records.records)]


@pytest.mark.parametrize("level", [1, 3, 9])
def test_each_record_is_one_gzip_member_warcio_reads_with_its_digests(level: int) -> None:
    plain = _all_records(RecordMaker(gzip=False, gzip_level=level))
    packed = _all_records(RecordMaker(gzip=True, gzip_level=level))
    types = {record.record_type for record in plain}
    assert types == {"warcinfo", "response", "revisit", "request", "metadata", "resource"}
    for record in packed:
        assert record.data[:2] == b"\x1f\x8b"
        (member,) = list(ArchiveIterator(io.BytesIO(record.data), check_digests="raise"))
        assert member.rec_type == record.record_type
        assert member.rec_headers.get_header("WARC-Record-ID") == record.record_id
    stream = b"".join(r.data for r in packed)
    found = [r.rec_type for r in ArchiveIterator(io.BytesIO(stream), check_digests="raise")]
    assert found == [r.record_type for r in plain]
    # one member per record: decompressing each gives a whole record of the same length
    assert [len(gzip.decompress(r.data)) for r in packed] == [len(r.data) for r in plain]


@pytest.mark.parametrize("level", range(1, 10))
def test_every_level_makes_one_gzip_member_zlib_inflates(level: int) -> None:
    import zlib

    from archiver_plugins.warc.records import gzip_member_compressor

    data = b"".join(b"<p>%d caf\xc3\xa9 lantern harbor</p>\n" % i for i in range(2000))
    member = gzip_member_compressor(level)(data)
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    assert inflater.decompress(member) == data
    assert inflater.eof and not inflater.unused_data
    assert len(member) < len(data) // 4


def test_cdx_timestamp_is_warcios() -> None:
    from archiver_plugins.warc.records import cdx_timestamp, warc_date
    from warcio.timeutils import iso_date_to_timestamp

    for moment in (
        datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ):
        date = warc_date(moment)
        assert cdx_timestamp(date) == iso_date_to_timestamp(date)
