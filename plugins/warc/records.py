"""Turn one `Page` into WARC records (request, response or revisit, metadata), serialized.

Pure functions, run in the writer process (worker.py): building a record computes digests and the
gzip member, which is the real cost of archiving.  warcio does the serialization; we
hand it the HTTP header block as bytes so it is stored as received (warcio would
otherwise re-encode non-ASCII header values).

What is stored, and why:

* The response block is the status line, the headers as received in their order
  (duplicates kept), and the entity body as it came on the wire with its
  Content-Encoding intact.  Chunked transfer coding was already removed by the
  fetcher, so ``Transfer-Encoding: chunked`` is dropped from the stored headers: the
  stored headers then agree with the stored body, and the payload digest is over the
  de-chunked body, as the WARC 1.1 guidelines ask.  The warcinfo record says so.
* The request block is the request line for the URL actually sent
  (``page.request_target`` when the fetcher had to re-encode the URL) and the request
  headers sent.
* A payload already stored in this archive becomes a revisit record
  (identical-payload-digest profile) pointing to the original.
* A 304 answered to a conditional request of ``crawl --update`` becomes a revisit record
  (server-not-modified profile) holding the 304's headers and pointing to the stored capture.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import io
import logging
import os
import socket
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from archiver.api import Page, __version__

from ..archive_reader.cdxj import clean_mime
from ..archive_reader.digests import payload_digest, sha1_label

log = logging.getLogger(__name__)

WARC_VERSION = "WARC/1.1"
HEADER_NOTE = (
    "Transfer-Encoding: chunked is removed from stored response headers because bodies"
    " are stored de-chunked; Content-Encoding is kept and bodies are stored encoded"
)


IDENTICAL_PAYLOAD_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True, slots=True)
class Original:
    """What a revisit record needs to point to the first copy of a payload."""

    url: str
    date: str
    record_id: str | None = None


class Originals(Protocol):
    """Where revisits look payloads up: a dict, or the archive's table on disk (dedup.py)."""

    def get(self, digest: str, /) -> Original | None: ...


@dataclass(frozen=True, slots=True)
class IndexFields:
    """The CDXJ fields of a record that are known before it is written."""

    url: str
    timestamp: str
    status: int | None
    mime: str | None
    digest: str | None


@dataclass(frozen=True, slots=True)
class Serialized:
    """One record, serialized (one gzip member when compressed), ready to append."""

    data: bytes
    record_type: str
    record_id: str
    index: IndexFields | None = None


@dataclass(frozen=True, slots=True)
class PageRecords:
    """The records of one page, written together or not at all."""

    records: tuple[Serialized, ...]
    digest: str | None
    """The payload digest when the response was stored in full (a dedup candidate)."""
    original: Original | None
    """This response as a revisit target, when `digest` is set."""

    @property
    def size(self) -> int:
        return sum(len(r.data) for r in self.records)


class _RawHttpHeaders(StatusAndHeaders):  # type: ignore[misc]
    """HTTP headers whose serialized form is fixed: the bytes as received."""

    def __init__(self, statusline: str, headers: list[tuple[str, str]], raw: bytes) -> None:
        super().__init__(statusline, headers, protocol="")
        self._raw = raw
        self.headers_buff = raw

    def compute_headers_buffer(self, header_filter: Any = None) -> None:
        self.headers_buff = self._raw

    def __bool__(self) -> bool:
        return True  # warcio tests truthiness to decide whether a record has HTTP headers


_EMPTY_DIGEST = payload_digest(b"")


FAST_GZIP_LEVELS = 3
"""Levels at and below which ISA-L (the ``isal`` package, when installed) compresses."""


def gzip_member_compressor(level: int) -> Callable[[bytes], bytes]:
    """One gzip member of the data at zlib `level` (1-9), with ISA-L for the fast levels.

    zlib was half of the writer process's CPU.  ISA-L's levels 1-3 compress a bench page
    three to four times faster than zlib's 1-3, to files as small or smaller (HTML of the
    bench site: 0.465 of the raw size at ISA-L 3, 0.471 at zlib 3; source code 0.6%
    larger); above 3, zlib alone compresses better, so it is used there and whenever
    ``isal`` is not installed.  Every reader inflates either with zlib.
    """
    if level <= FAST_GZIP_LEVELS:
        try:
            isal_zlib = importlib.import_module("isal.isal_zlib")
        except ImportError:
            pass
        else:
            compress: Callable[[bytes, int, int], bytes] = isal_zlib.compress
            return functools.partial(_compress_with, compress, level)
    return functools.partial(_compress_with, zlib.compress, level)


def _compress_with(compress: Callable[[bytes, int, int], bytes], level: int, data: bytes) -> bytes:
    return compress(data, level, zlib.MAX_WBITS | 16)


class RecordIds:
    """``<urn:uuid:...>`` record ids: random (version 4) UUIDs, as warcio makes them.

    The random bytes are drawn from the OS 256 ids at a time: `uuid.uuid4` asks it once
    an id, a system call for each of the three records of a page.  Not to be shared
    across a fork (both processes would hand out the same ids).
    """

    _BATCH = 256

    def __init__(self) -> None:
        self._pool = b""
        self._next = 0

    def __call__(self) -> str:
        if self._next >= len(self._pool):
            self._pool, self._next = os.urandom(16 * self._BATCH), 0
        raw = self._pool[self._next : self._next + 16]
        self._next += 16
        return f"<urn:uuid:{uuid.UUID(bytes=raw, version=4)}>"


_NO_PAYLOAD_DIGEST = ("warcinfo", "revisit")
"""Record types warcio gives no payload digest of its own (a revisit's names the original)."""


def warc_fields(fields: Sequence[tuple[str, str]], uri: str) -> bytes:
    """``name: value`` lines (application/warc-fields); a line break in a value becomes a space."""
    text = "".join([f"{name}: {value}\r\n" for name, value in fields])
    if text.count("\n") != len(fields) or text.count("\r") != len(fields):
        text = "".join([f"{name}: {_clean(value, name, uri)}\r\n" for name, value in fields])
    return text.encode("utf-8", "surrogateescape")


def warc_date(moment: datetime) -> str:
    moment = moment.astimezone(UTC).replace(tzinfo=None)
    return str(datetime_to_iso_date(moment, use_micros=True))


def cdx_timestamp(date: str) -> str:
    """``YYYYMMDDhhmmss`` of a `warc_date` (what warcio's `iso_date_to_timestamp` gives,
    without parsing the date back into a datetime)."""
    return date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]


def _header_bytes(value: str) -> bytes:
    """Header text back to wire bytes: the fetcher decodes them as latin-1."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")


def _clean(value: str, what: str, url: str) -> str:
    if "\r" in value or "\n" in value:
        log.warning("%s: line break in %s replaced by a space to keep the record valid", url, what)
        return value.replace("\r", " ").replace("\n", " ")
    return value


def stored_response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Response headers as stored: as received, minus the chunked transfer coding."""
    kept: list[tuple[str, str]] = []
    for name, value in headers:
        if name.strip().lower() == "transfer-encoding":
            codings = [c.strip() for c in value.split(",") if c.strip()]
            codings = [c for c in codings if c.lower() != "chunked"]
            if not codings:
                continue
            value = ", ".join(codings)
        kept.append((name, value))
    return kept


def http_block(first_line: str, headers: Sequence[tuple[str, str]], url: str) -> bytes:
    """Status or request line, headers and the blank line, as bytes."""
    lines = [_header_bytes(_clean(first_line, "the status line", url))]
    for name, value in headers:
        lines.append(
            _header_bytes(_clean(name, "a header name", url))
            + b": "
            + _header_bytes(_clean(value, f"header {name}", url))
        )
    return b"\r\n".join(lines) + b"\r\n\r\n"


REQUEST_VERSION = "HTTP/1.1"
"""What the crawler sends; `page.http_version` is the server's answer, which may be 1.0."""


def request_line(page: Page) -> str:
    parts = urlsplit(page.request_target or page.url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return f"{page.method} {target} {REQUEST_VERSION}"


class RecordMaker:
    """Builds serialized records with warcio's `WARCWriter`; one per writer process, used from
    one thread."""

    def __init__(self, gzip: bool, gzip_level: int) -> None:
        self.gzip = gzip
        self.gzip_level = gzip_level
        self._builder = WARCWriter(io.BytesIO(), gzip=False, warc_version=WARC_VERSION)
        self._record_id = RecordIds()
        self._compress = gzip_member_compressor(gzip_level)

    # -- serialization ---------------------------------------------------------------

    def _serialize(self, record: Any) -> bytes:
        buffer = io.BytesIO()
        self._builder.out = buffer  # one writer for all records: building one asks the OS its host name
        self._builder.write_record(record)
        data = buffer.getvalue()
        return self._compress(data) if self.gzip else data

    def _record(
        self,
        uri: str,
        record_type: str,
        *,
        block: bytes = b"",
        http: bytes | None = None,
        headers: Mapping[str, str],
        content_type: str = "",
    ) -> tuple[bytes, str]:
        """The record (one gzip member when compressed) and its WARC-Record-ID."""
        record_id = self._record_id()
        warc_headers = {"WARC-Record-ID": record_id, **headers}
        # Digests given here are not computed again by warcio (it reads the block in 16 KB
        # steps and encodes each digest in pure Python): the same values, at a third the cost.
        whole = hashlib.sha1(http or b"")
        whole.update(block)
        block_digest = sha1_label(whole.digest())
        if record_type not in _NO_PAYLOAD_DIGEST and "WARC-Payload-Digest" not in warc_headers:
            if http is None:
                warc_headers["WARC-Payload-Digest"] = block_digest  # the block is the payload
            else:
                warc_headers["WARC-Payload-Digest"] = payload_digest(block) if block else _EMPTY_DIGEST
        warc_headers["WARC-Block-Digest"] = block_digest
        http_headers = None
        if http is not None:
            http_headers = _RawHttpHeaders("", [], http)
        record = self._builder.create_warc_record(
            uri,
            record_type,
            payload=io.BytesIO(block),
            length=len(block),
            warc_content_type=content_type,
            warc_headers_dict=warc_headers,
            http_headers=http_headers,
        )
        return self._serialize(record), record_id

    # -- records ---------------------------------------------------------------------

    def warcinfo(self, filename: str, fields: Sequence[tuple[str, str]]) -> Serialized:
        """The first record of a file: who wrote it, how, for which crawl."""
        body = b"".join(
            f"{name}: {_clean(str(value), name, filename)}\r\n".encode() for name, value in fields
        )
        headers = {"WARC-Date": warc_date(datetime.now(UTC)), "WARC-Filename": filename}
        data, record_id = self._record(
            "", "warcinfo", block=body, headers=headers, content_type="application/warc-fields"
        )
        return Serialized(data, "warcinfo", record_id)

    def page(
        self,
        page: Page,
        outlinks: Sequence[str],
        originals: Originals,
        *,
        dedup: bool,
        metadata: bool,
        not_modified: Original | None = None,
        not_modified_digest: str | None = None,
    ) -> PageRecords:
        """request + response (or revisit) [+ metadata] for one HTTP exchange; `outlinks` are
        the page's links as ``URL KIND`` strings.

        `not_modified` is the stored capture a 304 confirmed: the exchange becomes a
        server-not-modified revisit holding the 304's headers and pointing at it, with the
        payload digest of that capture (`not_modified_digest`), which is the payload it
        stands for; readers resolve it by that digest as they resolve any revisit.
        """
        uri = page.request_target or page.url
        date = warc_date(page.fetched_at)
        digest = payload_digest(page.body)
        stored_headers = stored_response_headers(page.headers)
        status_line = f"{page.http_version} {page.status} {page.reason}".rstrip()
        head = http_block(status_line, stored_headers, uri)
        common = {"WARC-Date": date}
        if page.peer:
            common["WARC-IP-Address"] = page.peer

        original: Original | None
        if not_modified is not None:
            original, profile = not_modified, NOT_MODIFIED_PROFILE
            digest = not_modified_digest or digest
        else:
            original = originals.get(digest) if dedup and page.body and not page.truncated else None
            profile = IDENTICAL_PAYLOAD_PROFILE
        response_headers = {**common, "WARC-Payload-Digest": digest}
        if page.truncated:
            response_headers["WARC-Truncated"] = page.truncated
        if original is not None:
            response_headers["WARC-Profile"] = profile
            response_headers["WARC-Refers-To-Target-URI"] = original.url
            response_headers["WARC-Refers-To-Date"] = original.date
            if original.record_id:
                response_headers["WARC-Refers-To"] = original.record_id
            response, response_id = self._record(
                uri,
                "revisit",
                http=head,
                headers=response_headers,
                content_type="application/http; msgtype=response",
            )
            response_type = "revisit"
            mime: str | None = "warc/revisit"
        else:
            response, response_id = self._record(
                uri, "response", block=page.body, http=head, headers=response_headers
            )
            response_type = "response"
            content_type = next((v for k, v in stored_headers if k.strip().lower() == "content-type"), None)
            mime = clean_mime(content_type.strip()) if content_type is not None else None

        request_head = http_block(request_line(page), page.request_headers, uri)
        request, request_id = self._record(
            uri,
            "request",
            http=request_head,
            headers={**common, "WARC-Concurrent-To": response_id},
        )
        index = IndexFields(
            url=uri,
            timestamp=cdx_timestamp(date),
            status=page.status,
            mime=mime,
            digest=digest,
        )
        records = [
            Serialized(response, response_type, response_id, index),
            Serialized(request, "request", request_id),
        ]
        if metadata:
            records.append(self._metadata(page, outlinks, uri, date, response_id))
        stored_in_full = original is None and bool(page.body) and not page.truncated
        return PageRecords(
            records=tuple(records),
            digest=digest if stored_in_full else None,
            original=Original(uri, date, response_id) if stored_in_full else None,
        )

    def resources(self, parts: Sequence[tuple[str, str, bytes]], moment: datetime) -> PageRecords:
        """One resource record per (URI, content type, block): what a plugin derived from a page
        (its rendered DOM, a screenshot), under a ``urn:`` URI of its own."""
        date = warc_date(moment)
        timestamp = cdx_timestamp(date)
        records = []
        for uri, content_type, block in parts:
            digest = payload_digest(block)
            data, record_id = self._record(
                uri,
                "resource",
                block=block,
                headers={"WARC-Date": date, "WARC-Payload-Digest": digest},
                content_type=content_type,
            )
            index = IndexFields(
                url=uri, timestamp=timestamp, status=None, mime=clean_mime(content_type), digest=digest
            )
            records.append(Serialized(data, "resource", record_id, index))
        return PageRecords(records=tuple(records), digest=None, original=None)

    def _metadata(
        self, page: Page, outlinks: Sequence[str], uri: str, date: str, response_id: str
    ) -> Serialized:
        """Outlinks and crawl facts, in the warc-fields form Heritrix writes."""
        fields: list[tuple[str, str]] = []
        if page.referrer:
            fields.append(("via", page.referrer))
        fields.append(("hopsFromSeed", str(page.depth)))
        fields.append(("fetchTimeMs", str(round(page.elapsed * 1000))))
        if page.redirect_to:
            fields.append(("redirect", page.redirect_to))
        fields.extend([("outlink", link) for link in outlinks])
        body = warc_fields(fields, uri)
        data, record_id = self._record(
            uri,
            "metadata",
            block=body,
            headers={"WARC-Date": date, "WARC-Concurrent-To": response_id},
            content_type="application/warc-fields",
        )
        return Serialized(data, "metadata", record_id)


def warcinfo_fields(config_summary: Iterable[tuple[str, str]], roots: Iterable[str]) -> list[tuple[str, str]]:
    """The warcinfo body: software, format, host, the header note, roots, settings."""
    fields = [
        ("software", f"archiver/{__version__} (warcio/{importlib.metadata.version('warcio')})"),
        ("format", "WARC File Format 1.1"),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ),
        ("hostname", socket.gethostname()),
        ("http-header-note", HEADER_NOTE),
    ]
    fields.extend(("root", root) for root in roots)
    fields.extend((name, value) for name, value in config_summary if value != "")
    return fields
