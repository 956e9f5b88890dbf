"""WARC records are serialized by hand (`record_bytes`): byte for byte what warcio writes."""

from __future__ import annotations

import io
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from archiver_plugins.warc.records import RecordMaker, record_bytes
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.model import Link, LinkKind, Page


class _RawHttpHeaders(StatusAndHeaders):  # type: ignore[misc]
    """HTTP headers whose serialized form is fixed: the bytes as received."""

    def __init__(self, raw: bytes) -> None:
        super().__init__("", [], protocol="")
        self._raw = raw
        self.headers_buff = raw

    def compute_headers_buffer(self, header_filter: Any = None) -> None:
        self.headers_buff = self._raw

    def __bool__(self) -> bool:
        return True


def warcio_bytes(
    uri: str,
    record_type: str,
    record_id: str,
    headers: Mapping[str, str],
    block: bytes = b"",
    http: bytes | None = None,
    content_type: str = "",
) -> bytes:
    """The reference: warcio's builder and writer, as the plugin used them before."""
    builder = WARCWriter(io.BytesIO(), gzip=False, warc_version="WARC/1.1")
    record = builder.create_warc_record(
        uri,
        record_type,
        payload=io.BytesIO(block),
        length=len(block),
        warc_content_type=content_type,
        warc_headers_dict={"WARC-Record-ID": record_id, **headers},
        http_headers=_RawHttpHeaders(http) if http is not None else None,
    )
    buffer = io.BytesIO()
    WARCWriter(buffer, gzip=False, warc_version="WARC/1.1").write_record(record)
    return buffer.getvalue()


def _text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice("abc/?=&é%: -") for _ in range(rng.randint(0, size)))


@pytest.mark.parametrize("seed", range(4))
def test_records_match_warcio(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        record_type = rng.choice(["response", "request", "revisit", "metadata", "warcinfo", "resource"])
        uri = "" if record_type == "warcinfo" else "http://example.org/" + _text(rng, 20)
        headers = {"WARC-Date": "2024-01-02T03:04:05.123456Z"}
        if rng.random() < 0.5:
            headers["WARC-IP-Address"] = "127.0.0.1"
        if record_type in ("response", "revisit") or rng.random() < 0.2:
            headers["WARC-Payload-Digest"] = "sha1:ABC"
        if rng.random() < 0.3:
            headers["WARC-Concurrent-To"] = "<urn:uuid:x>"
        if rng.random() < 0.2:
            headers["WARC-Truncated"] = "length"
        block = rng.randbytes(rng.choice([0, 1, 100, 70_000]))
        http = None
        if record_type in ("response", "request", "revisit"):
            http = f"HTTP/1.1 200 OK\r\nX: {_text(rng, 10)}\r\n\r\n".encode()
        if record_type == "revisit":
            block = b""
        content_type = rng.choice(["", "application/warc-fields", "text/plain"])
        args = (uri, record_type, "<urn:uuid:1234>", headers, block, http, content_type)
        assert record_bytes(*args) == warcio_bytes(*args), args


def test_page_records_read_back_with_digests_checked() -> None:
    maker = RecordMaker(True, 6)
    page = Page(
        url="http://example.org/é?a=1",
        status=200,
        reason="OK",
        request_headers=(("Host", "example.org"),),
        headers=(("Content-Type", "text/html"), ("X-Odd", "caf\xe9")),
        body=b"<html>" + bytes(range(256)) * 40 + b"</html>",
        peer="127.0.0.1",
        fetched_at=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        referrer="http://example.org/",
    )
    built = maker.page(
        page, [Link("http://example.org/b", LinkKind.REQUISITE)], {}, dedup=True, metadata=True
    )
    stream = io.BytesIO(b"".join(r.data for r in built.records))
    found = [(r.rec_type, r.content_stream().read()) for r in ArchiveIterator(stream, check_digests="raise")]
    assert [t for t, _ in found] == ["response", "request", "metadata"]
    assert found[0][1] == page.body
    assert b"outlink: http://example.org/b requisite" in found[2][1]
