"""Reading a WARC file member by member, wherever the members end in the reader's chunks."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from plugins.mirror.tail import check_tail
from plugins.warc.members import iter_members
from plugins.warc.verify import truncate_to_last_good, verify_file

CHUNK = 64 * 1024
"""The size the record reader reads a file in (members.py)."""
MIB = 1024 * 1024
"""The size `warc check` and the export's tail check read a file in."""


def record_member(payload: bytes, uri: str) -> bytes:
    """One resource record written by warcio as one gzip member."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    record = writer.create_warc_record(uri, "resource", payload=io.BytesIO(payload), length=len(payload))
    writer.write_record(record)
    return out.getvalue()


def member_of_size(size: int) -> bytes:
    """A record whose gzip member is exactly `size` bytes: an incompressible payload, its
    length and the length of the record's URI searched."""
    noise = random.Random(size).randbytes(size)
    overhead = len(record_member(noise[: size - 2000], "urn:test:first")) - (size - 2000)
    for pad in range(64):
        for length in range(size - overhead - 8, size - overhead + 8):
            member = record_member(noise[:length], "urn:test:first?" + "x" * pad)
            if len(member) == size:
                return member
    raise AssertionError(f"no payload length gives a member of {size} bytes")


@pytest.mark.parametrize("boundary", [CHUNK - 2, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 1])
def test_a_member_ending_anywhere_in_a_chunk_is_followed_by_the_next(tmp_path: Path, boundary: int) -> None:
    first = member_of_size(boundary)
    second = record_member(b"the second record", "urn:test:second")
    path = tmp_path / "boundary.warc.gz"
    path.write_bytes(first + second + record_member(b"the third", "urn:test:third"))
    with path.open("rb") as handle:
        members = list(iter_members(handle))
    assert [m.problem for m in members] == [None, None, None]
    assert [m.offset for m in members] == [0, boundary, boundary + len(second)]
    assert b"urn:test:second" in members[1].data and members[2].data.startswith(b"WARC/1.")
    with path.open("rb") as handle:  # warcio, which wrote the file, reads the same three records
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(handle)]
    assert uris[1:] == ["urn:test:second", "urn:test:third"] and uris[0].startswith("urn:test:first")


def three_records(path: Path, first_size: int) -> int:
    """Write a WARC file whose second record starts at `first_size`; returns the file's size."""
    data = member_of_size(first_size) + record_member(b"second", "urn:test:second")
    path.write_bytes(data + record_member(b"third", "urn:test:third"))
    return path.stat().st_size


@pytest.mark.parametrize("boundary", [MIB - 1, MIB, 2 * MIB - 1])
def test_check_and_repair_keep_a_file_whose_member_ends_a_byte_short_of_a_chunk(
    tmp_path: Path, boundary: int
) -> None:
    """`warc check` and the recovery of a killed crawl's file read 1 MiB at a time: a record
    starting at the chunk's last byte is a record, not damage to cut off."""
    path = tmp_path / "boundary.warc.gz"
    size = three_records(path, boundary)
    report = verify_file(path)
    assert report.ok and report.records == 3 and report.good_end == size, report.faults
    assert truncate_to_last_good(path) == 0 and path.stat().st_size == size


@pytest.mark.parametrize("boundary", [MIB - 1, 2 * MIB - 1])
def test_the_export_tail_check_finds_no_damage_at_a_chunk_boundary(tmp_path: Path, boundary: int) -> None:
    path = tmp_path / "boundary.warc.gz"
    size = three_records(path, boundary)
    tail = check_tail(path, [])
    assert not tail.damaged and tail.good_end == size, tail.problem
