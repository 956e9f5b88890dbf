"""The strict WARC verifier, crash truncation, and the writer's disk-full rollback."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from archiver_plugins.archive_reader import open_archive
from archiver_plugins.warc.verify import truncate_to_last_good, verify_file
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def make_warc(path: Path, count: int = 4, gzip: bool = True) -> list[int]:
    """A file of `count` response records with incompressible bodies; their end offsets."""
    ends = []
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=gzip, warc_version="1.1")
        for i in range(count):
            body = os.urandom(3000)
            http = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                f"http://127.0.0.1/{i}",
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
            )
            writer.write_record(record)
            ends.append(handle.tell())
    return ends


def test_whole_file_passes(tmp_path: Path) -> None:
    path = tmp_path / "a.warc.gz"
    ends = make_warc(path)
    report = verify_file(path)
    assert report.ok and report.records == 4 and report.good_end == ends[-1] == report.size


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data, ends: data[: ends[2] + 1500], "cut off"),  # mid-body
        (lambda data, ends: data[:-4], "cut off"),  # gzip length trailer missing
        (lambda data, ends: data + b"\0" * 4096, "4096 NUL bytes"),
        (lambda data, ends: data + b"garbage", "not a gzip member"),
    ],
    ids=["mid-body", "missing-trailer", "nul-tail", "garbage-tail"],
)
def test_damaged_gzip_file_is_reported_and_cut_back(tmp_path: Path, damage, message) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.warc.gz"
    ends = make_warc(path)
    path.write_bytes(damage(path.read_bytes(), ends))
    report = verify_file(path)
    assert not report.ok
    (fault,) = report.faults
    assert message in fault.message
    assert fault.path == path and fault.fatal
    expected_end = ends[2] if report.records == 3 else ends[3]
    assert report.good_end == expected_end
    assert fault.offset == expected_end
    assert str(path) in str(fault) and f"offset {expected_end}" in str(fault)
    size = path.stat().st_size
    assert truncate_to_last_good(path) == size - expected_end
    assert verify_file(path).ok


def test_crc_mismatch_is_found(tmp_path: Path) -> None:
    path = tmp_path / "a.warc.gz"
    ends = make_warc(path)
    data = bytearray(path.read_bytes())
    data[ends[1] - 6] ^= 0xFF  # inside the CRC-32 of the second member
    path.write_bytes(bytes(data))
    report = verify_file(path)
    assert report.faults[0].offset == ends[0]
    assert "incorrect data check" in report.faults[0].message
    assert report.good_end == ends[0]


def test_plain_warc_checks_length_and_digests(tmp_path: Path) -> None:
    path = tmp_path / "a.warc"
    ends = make_warc(path, gzip=False)
    assert verify_file(path).ok
    data = bytearray(path.read_bytes())
    data[ends[1] - 10] ^= 0x01  # one body byte of record 2: digests fail, structure holds
    path.write_bytes(bytes(data))
    report = verify_file(path)
    assert {f.message for f in report.faults} == {
        "WARC-Block-Digest mismatch",
        "WARC-Payload-Digest mismatch",
    }
    assert all(not f.fatal and f.offset == ends[0] for f in report.faults)
    assert "response" in report.faults[0].record and "http://127.0.0.1/1" in report.faults[0].record
    assert report.good_end == ends[-1]
    path.write_bytes(bytes(data[: ends[3] - 100]))
    report = verify_file(path)
    assert any("Content-Length says" in f.message for f in report.faults)
    assert report.good_end == ends[2]


DECHUNKED_DIGEST = "sha1:" + base64.b32encode(hashlib.sha1(b"Wikipedia").digest()).decode()


def test_chunked_payload_digest_may_be_over_dechunked_body(tmp_path: Path) -> None:
    body = b"4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"
    path = tmp_path / "c.warc.gz"
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        http = StatusAndHeaders("200 OK", [("Transfer-Encoding", "chunked")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            "http://127.0.0.1/", "response", payload=io.BytesIO(body), length=len(body),
            http_headers=http,
            warc_headers_dict={"WARC-Payload-Digest": DECHUNKED_DIGEST},
        )  # fmt: skip
        writer.write_record(record)
    assert verify_file(path).ok


def test_truncate_never_empties_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "a.warc.gz"
    make_warc(path)
    before = path.read_bytes()
    assert truncate_to_last_good(path) == 0
    assert path.read_bytes() == before


CHILD = textwrap.dedent(
    """
    import asyncio, os, resource, sys
    from pathlib import Path
    from archiver.config import Config
    from archiver.errors import ArchiveError
    from archiver.model import Crawl, Page
    from archiver_plugins.warc import WarcWriter
    from archiver_plugins.warc.settings import WarcSettings

    async def main():
        archive = Path(sys.argv[1])
        crawl = Crawl(config=Config(), archive=archive, roots=())
        writer = WarcWriter(WarcSettings(cdxj=False))
        # before the writer process starts: it inherits the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
        await writer.crawl_started(crawl=crawl)
        written = 0
        try:
            for i in range(100):
                page = Page(url=f"http://127.0.0.1/{i}", status=200, body=os.urandom(7000),
                            headers=(("Content-Type", "image/png"),))
                await writer.page_fetched(page=page, links=[], crawl=crawl)
                written += 1
        except ArchiveError as exc:
            print("written", written)
            print("error", exc)
        finally:
            await writer.crawl_finished(crawl=crawl)

    asyncio.run(main())
    """
)


def test_disk_full_cuts_back_to_last_whole_record(tmp_path: Path) -> None:
    """RLIMIT_FSIZE in a child makes the write fail midway, as a full disk does."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    written = int(lines["written"])
    assert 5 < written < 15
    assert "cut back to its last whole record" in lines["error"]
    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    report = verify_file(warc)
    assert report.ok, [str(f) for f in report.faults]
    assert report.size < 100_000
    assert report.records == 1 + 3 * written  # warcinfo + request/response/metadata per page
    urls = [c.url for c in open_archive(tmp_path).iter_captures()]
    assert urls == [f"http://127.0.0.1/{i}" for i in range(written)]
