"""The cost of a text diff is bounded: in CPU for hostile texts, in memory for huge pages,
in how many run at once.  Requests run in a child process (``web_diff_child.py``) with a
generous wall-clock limit and their peak resident size measured."""

from __future__ import annotations

import difflib
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.replay.changes_view import DIFFS_AT_ONCE, DIFFS_WAITING
from archiver_plugins.replay.diffing import align, side_by_side, unified
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

TESTS = Path(__file__).resolve().parent
PAGE = "http://big.example/page"
WALL_SECONDS = 60


def write_two_captures(folder: Path, older: bytes, newer: bytes) -> Path:
    path = folder / "warc" / "pages.warc"
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=False)  # quick to write: the test measures the reading
        for date, data in (("2024-01-01T00:00:00Z", older), ("2024-02-01T00:00:00Z", newer)):
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                PAGE,
                "response",
                payload=io.BytesIO(data),
                length=len(data),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
    return folder


def diff_in_child(archive: Path, view: str, count: int = 1) -> dict[str, Any]:
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    done = subprocess.run(
        [sys.executable, str(TESTS / "web_diff_child.py"), str(archive), PAGE, view, str(count)],
        capture_output=True,
        text=True,
        timeout=WALL_SECONDS,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def hostile_texts(lines: int) -> tuple[bytes, bytes]:
    """Two texts of `lines` sentences sharing one repeated sentence at alternate places: the
    worst case of difflib's matcher without its junk heuristic (cubic in the lines)."""
    older = " ".join("Same again." if i % 2 else f"Older line {i}." for i in range(lines))
    newer = " ".join(f"Newer line {i}." if i % 2 else "Same again." for i in range(lines))
    return f"<p>{older}</p>".encode(), f"<p>{newer}</p>".encode()


@pytest.mark.parametrize("view", ["side", "unified"])
def test_a_diff_of_hostile_texts_ends_in_bounded_time(tmp_path: Path, view: str) -> None:
    archive = write_two_captures(tmp_path / "h", *hostile_texts(3000))
    result = diff_in_child(archive, view)  # before the bound: over a minute of CPU
    assert result["statuses"] == [200]
    assert "Newer line 1999." in result["body"]


def big_page(megabytes: int, seed: int) -> bytes:
    """`megabytes` of paragraphs: 2,000 different ones repeated."""
    rnd = random.Random(seed)
    words = [f"word{n}" for n in range(3000)]
    block = "".join("<p>" + " ".join(rnd.choice(words) for _ in range(40)) + ".</p>\n" for _ in range(2000))
    repeats = megabytes * 1024 * 1024 // len(block) + 1
    return ("<!doctype html><title>Big</title><body>" + block * repeats + "</body>").encode()


def test_a_diff_of_huge_pages_parses_a_prefix_and_few_run_at_once(tmp_path: Path) -> None:
    archive = write_two_captures(tmp_path / "b", big_page(16, 1), big_page(16, 2))
    one = diff_in_child(archive, "side")
    assert one["statuses"] == [200]
    assert one["body"].count("The text is long: only its first") == 2
    # the pages are read whole (16 MB each); parsing all of them took over 250 MB more
    assert one["grown_mb"] < 120, one["grown_mb"]
    many = diff_in_child(archive, "unified", count=DIFFS_AT_ONCE + DIFFS_WAITING + 2)
    assert sorted(set(many["statuses"])) == [200, 503]
    assert many["retry_after"] and all(retry.isdigit() for retry in many["retry_after"])
    # two at once (each reads both pages whole), the others waiting or told to come back
    assert many["grown_mb"] < 280, many["grown_mb"]


def test_the_matcher_gives_up_to_a_coarse_alignment_past_its_budget() -> None:
    left = ["kept start", "a", "b", "same", "c", "kept end"]
    right = ["kept start", "x", "same", "y", "z", "kept end"]
    detailed = align(left, right, autojunk=False)
    assert not detailed.coarse and ("equal", 3, 4, 2, 3) in detailed.opcodes
    coarse = align(left, right, autojunk=False, budget=-1.0)
    assert coarse.coarse
    assert list(coarse.opcodes) == [("equal", 0, 1, 0, 1), ("replace", 1, 5, 1, 5), ("equal", 5, 6, 5, 6)]
    assert align([], ["new"], autojunk=True, budget=-1.0).opcodes == [("insert", 0, 0, 0, 1)]
    assert align(["a"], ["a"], autojunk=True, budget=-1.0).opcodes == [("equal", 0, 1, 0, 1)]


def test_unified_and_side_by_side_match_difflib_within_budget() -> None:
    rnd = random.Random(7)
    for _ in range(500):
        pool = [f"line {n}" for n in range(rnd.randrange(1, 12))]
        left = [rnd.choice(pool) for _ in range(rnd.randrange(0, 30))]
        right = [rnd.choice(pool) for _ in range(rnd.randrange(0, 30))]
        lines, coarse = unified(left, right, "A", "B")
        assert not coarse
        assert lines == list(difflib.unified_diff(left, right, "A", "B", lineterm="", n=3))
        rows, _ = side_by_side(left, right)
        assert [row.left for row in rows if row.left is not None] == left
        assert [row.right for row in rows if row.right is not None] == right


def test_decoding_a_prefix_stops_at_its_size_for_every_coding() -> None:
    import gzip
    import zlib

    import brotli
    import zstandard

    from archiver.decode import decode_content

    body = b"".join(b"line %d of a long page\n" % n for n in range(200_000))
    encoded = {
        "": body,
        "gzip": gzip.compress(body),
        "deflate": zlib.compress(body),
        "br": brotli.compress(body),
        "zstd": zstandard.ZstdCompressor().compress(body),
    }
    for coding, data in encoded.items():
        decoded = decode_content(data, coding, 100_000, max_ratio=100_000, prefix=True)
        assert decoded.error is None and decoded.cut, coding
        assert decoded.content == body[:100_000], coding
        whole = decode_content(data, coding, len(body), max_ratio=100_000, prefix=True)
        assert whole.content == body and not whole.cut, coding
        assert decode_content(data, coding, 100_000, max_ratio=100_000).error or not coding
