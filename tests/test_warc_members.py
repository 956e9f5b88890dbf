"""Reading a WARC file member by member, wherever the members end in the reader's chunks."""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from plugins.archive_reader.members import ReadLimits, iter_members
from plugins.mirror.tail import check_tail
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


def damaged_file(path: Path, damage: str) -> int:
    """Two whole records then `damage`; returns the offset where the damage starts."""
    good = record_member(b"first " * 1000, "urn:test:first") + record_member(b"second", "urn:test:second")
    third = record_member(b"third " * 50_000, "urn:test:third")
    tail = {
        "nul": b"\0" * 5000,
        "garbage": b"not gzip at all",
        "cut": third[: len(third) // 2],
        "no-trailer": third[:-4],
        "bad-crc": third[:-8] + bytes(b ^ 0xFF for b in third[-8:-4]) + third[-4:],
    }[damage]
    path.write_bytes(good + tail)
    return len(good)


@pytest.mark.parametrize("damage", ["nul", "garbage", "cut", "no-trailer", "bad-crc"])
def test_every_reader_stops_at_the_same_damage(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "damaged.warc.gz"
    start = damaged_file(path, damage)
    with path.open("rb") as handle:
        members = list(iter_members(handle))
    assert [m.problem is None for m in members] == [True, True, False] and members[2].fatal
    assert members[2].offset == start
    report = verify_file(path)
    assert report.records == 2 and report.good_end == start
    (fault,) = report.faults
    assert fault.offset == start and fault.fatal
    tail = check_tail(path, [])
    assert tail.damaged and tail.good_end == start
    expected = {
        "nul": ["NUL bytes", "NUL bytes", f"{path.stat().st_size - start} NUL bytes at offset {start}"],
        "garbage": ["not a gzip member", "not a gzip member", "not a WARC record"],
        "cut": ["cut off", "cut off", f"offset {start} is cut off"],
        "no-trailer": ["cut off", "cut off", "cut off"],
        "bad-crc": ["incorrect data check", "incorrect data check", "incorrect data check"],
    }[damage]
    assert [expected[0] in (members[2].problem or ""), expected[1] in fault.message] == [True, True]
    assert expected[2] in (tail.problem or "")
    assert truncate_to_last_good(path) > 0 and path.stat().st_size == start and verify_file(path).ok


def test_a_record_bigger_than_the_cap_is_reported_by_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "big.warc.gz"
    first = record_member(b"small", "urn:test:small")
    path.write_bytes(first + record_member(b"z" * 3 * MIB, "urn:test:big"))
    limits = ReadLimits(max_record_size=MIB, max_decoded_size=MIB, max_decompression_ratio=100)
    with path.open("rb") as handle:
        members = list(iter_members(handle, limits))
    assert members[1].offset == len(first) and f"more than {MIB} bytes" in (members[1].problem or "")
    report = verify_file(path, limits)
    assert [f.fatal for f in report.faults] == [False] and "urn:test:big" in report.faults[0].record
    assert f"more than {MIB} bytes" in report.faults[0].message and report.good_end == len(first)
    tail = check_tail(path, [], limits)
    assert tail.good_end == len(first) and f"more than {MIB} bytes" in (tail.problem or "")
    assert truncate_to_last_good(path, limits) == 0  # too big is not damage: nothing is cut


def inflating_to(size: int) -> bytes:
    """A compressible record whose gzip member inflates to exactly `size` bytes."""
    overhead = len(gzip.decompress(record_member(b"a" * size, "urn:test:big"))) - size
    for length in range(size - overhead - 4, size - overhead + 4):
        member = record_member(b"a" * length, "urn:test:big")
        if len(gzip.decompress(member)) == size:
            return member
    raise AssertionError(f"no payload length inflates to {size} bytes")


@pytest.mark.parametrize("inflated", [MIB - 1, MIB, MIB + 1, 3 * MIB])
def test_members_inflating_to_many_read_steps_are_whole(tmp_path: Path, inflated: int) -> None:
    """The tail check inflates 1 MiB at a time without keeping it: a member inflating to
    more than one step, at or just past a step's end, is whole, and so is what follows.
    When such a member ends with the next one in the same read, zlib reports the end of the
    stream and leaves the next member in `unconsumed_tail` too: a loop that looked at
    `unconsumed_tail` first fed it back for ever (the export hung on any compressible
    record of more than 1 MiB that was not the last in its read)."""
    path = tmp_path / "steps.warc.gz"
    big = inflating_to(inflated)
    data = record_member(b"x", "urn:test:x") + big + record_member(b"after", "urn:test:after")
    path.write_bytes(data)
    tail = check_tail(path, [])
    assert not tail.damaged and tail.good_end == len(data), tail.problem
    report = verify_file(path)
    assert report.ok and report.records == 3, report.faults
    with path.open("rb") as handle:
        members = list(iter_members(handle))
    assert [m.problem for m in members] == [None, None, None] and members[2].data.startswith(b"WARC/1.")
