"""Readers that take a file in pieces, with the thing they look for put at a piece's edge."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from archiver_plugins.archive_reader.members import DEFAULT_LIMITS
from archiver_plugins.index import reindex as reindex_module
from archiver_plugins.index.reindex import Chunk, ReindexStats, iter_captures, warc_chunks
from archiver_plugins.replay.status import LogFollower
from archiver_plugins.warc.stored import StoredCaptures
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.layout import ROBOTS_LOG_NAME
from archiver.robots import ALLOW_ALL, ROBOTS_MAX_SIZE, RULES, origin_of, saved_robots
from archiver.testing import CrawlFn, Site
from archiver.why import find_in_log


def response(writer: WARCWriter, url: str, body: bytes, content_type: str = "text/html") -> None:
    headers = StatusAndHeaders(
        "200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))], protocol="HTTP/1.1"
    )
    record = writer.create_warc_record(
        url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
    )
    writer.write_record(record)


def warc_holding_a_warc(path: Path) -> None:
    """A crawl that archived a ``.warc.gz`` download: that response's body is gzip members
    that inflate to WARC records, and deflate stores them verbatim (they do not compress)."""
    inner = io.BytesIO()
    inner_writer = WARCWriter(inner, gzip=True)
    noise = random.Random(3)
    for n in range(12):  # pages with their images: most of the file does not compress
        response(inner_writer, f"http://inner.test/{n}", f"<title>inner {n}</title> page".encode())
        response(inner_writer, f"http://inner.test/{n}.jpg", noise.randbytes(30_000), "image/jpeg")
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for n in range(20):
            response(writer, f"http://outer.test/a{n}", f"<title>a {n}</title> outer page".encode())
        response(writer, "http://outer.test/crawl.warc.gz", inner.getvalue(), "application/warc")
        for n in range(20):
            response(writer, f"http://outer.test/b{n}", f"<title>b {n}</title> outer page".encode())


@pytest.mark.parametrize("step", [3000, 20_000, 64 * 1024])
def test_reindex_ranges_do_not_start_inside_an_archived_warc_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    """A worker starts at the first gzip header in its range that inflates to ``WARC/``:
    the members of a WARC file stored as a response body are that too, and a worker that
    started there indexed pages the crawl never fetched, then stopped at the end of the
    inner file, losing the rest of its range."""
    path = tmp_path / "outer.warc.gz"
    warc_holding_a_warc(path)
    serial = [c.url for c in iter_captures([path], ReindexStats())]
    assert len(serial) == 40 and not any("inner.test" in url for url in serial)
    monkeypatch.setattr(reindex_module, "CHUNK_BYTES", step)
    monkeypatch.setattr(reindex_module, "MIN_CHUNK_BYTES", step)
    jobs = list(warc_chunks([path], 2))
    assert len(jobs) > 2
    found = []
    for job in jobs:
        chunk = Chunk(job)
        found += [capture.url for _key, capture in chunk.captures()]
        assert chunk.report().skipped_files == 0
    assert found == serial


@pytest.mark.parametrize("gzip", [True, False])
@pytest.mark.parametrize("padding", [100, 16 * 1024 - 700, 40_000, 200_000])
def test_an_update_finds_the_validators_of_a_response_with_large_headers(
    tmp_path: Path, gzip: bool, padding: int
) -> None:
    """The update reads the start of each latest capture for its ETag and Last-Modified: a
    header block longer than the first read (16 KiB) still has them."""
    folder = tmp_path / "warc"
    folder.mkdir()
    noise = random.Random(padding)
    big = "".join(noise.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(padding))
    path = folder / ("a.warc.gz" if gzip else "a.warc")
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=gzip)
        for n in range(3):
            headers = StatusAndHeaders(
                "200 OK",
                [
                    ("Content-Type", "text/html"),
                    ("Content-Security-Policy", big),
                    ("ETag", f'"tag-{n}"'),
                    ("Last-Modified", "Mon, 23 Nov 2026 13:00:00 GMT"),
                ],
                protocol="HTTP/1.1",
            )
            body = f"<title>{n}</title>".encode()
            record = writer.create_warc_record(
                f"http://example.test/{n}",
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=headers,
            )
            writer.write_record(record)
    table = StoredCaptures(folder, tmp_path / "stored.sqlite", DEFAULT_LIMITS)
    try:
        assert table.build() == 3
        for n in range(3):
            latest = table.get(f"http://example.test/{n}")
            assert latest is not None and latest.etag == f'"tag-{n}"', latest
            assert latest.last_modified == "Mon, 23 Nov 2026 13:00:00 GMT"
            assert latest.ref_uri == f"http://example.test/{n}"
    finally:
        table.close()


@pytest.mark.parametrize("after", ["\n", "\r\n", "-area\n"])
async def test_a_robots_rule_cut_by_the_size_cap_is_not_read_as_a_shorter_one(
    site: Site, crawl_archive: CrawlFn, after: str
) -> None:
    """Only the first 500 KiB of a robots.txt are read: a rule the cap cuts (``Allow:
    /private/a`` of ``Allow: /private/a-area``) is dropped, a whole one ending there kept."""
    head = "User-agent: *\nDisallow: /private/\n"
    rule = "Allow: /private/a"
    filler = "# filler line\n"
    room = ROBOTS_MAX_SIZE - len(head) - len(rule)
    body = head + filler * (room // len(filler)) + "#" * (room % len(filler) - 1) + "\n" + rule
    assert len(body.encode()) == ROBOTS_MAX_SIZE
    site.page("/", links=["/private/a", "/private/b"])
    site.page("/private/a", "<html>secret</html>")
    site.page("/private/b", "<html>secret</html>")
    site.page("/robots.txt", body + after + "Disallow: /\n", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), robots=True, max_tries=1)
    assert site.hits["/private/b"] == 0
    assert site.hits["/private/a"] == (0 if after.startswith("-") else 1)
    rules = saved_robots(crawl.archive, "archiver")[origin_of(site.url("/"))]
    assert rules.verdict(site.url("/private/a"), "archiver", 2).allowed == (not after.startswith("-"))


async def test_a_disallow_cut_by_the_size_cap_still_refuses_what_it_began_to_name(
    site: Site, crawl_archive: CrawlFn
) -> None:
    """A Disallow the cap cuts is kept as the shorter rule: it refuses more than the whole
    rule did, never less (``Disallow: /private/b`` of ``Disallow: /private/b-area``)."""
    head = "User-agent: *\n"
    rule = "Disallow: /private/b"
    filler = "# filler line\n"
    lines, rest = divmod(ROBOTS_MAX_SIZE - len(head) - len(rule), len(filler))
    if rest == 0:
        lines, rest = lines - 1, len(filler)
    body = head + filler * lines + "#" * (rest - 1) + "\n" + rule
    assert len(body.encode()) == ROBOTS_MAX_SIZE
    site.page("/", links=["/private/b-area/x", "/private/a"])
    site.page("/private/b-area/x", "<html>secret</html>")
    site.page("/private/a", "<html>open</html>")
    site.page("/robots.txt", body + "-area\n", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), robots=True, max_tries=1)
    assert site.hits["/private/b-area/x"] == 0 and site.hits["/private/a"] == 1
    rules = saved_robots(crawl.archive, "archiver")[origin_of(site.url("/"))]
    assert not rules.verdict(site.url("/private/b-area/x"), "archiver", 2).allowed


async def test_a_robots_rule_cut_by_the_body_cap_is_not_read_as_a_shorter_one(
    site: Site, crawl_archive: CrawlFn
) -> None:
    """With a body cap below 500 KiB, the robots.txt is cut there: the same holds."""
    head = "User-agent: *\nDisallow: /private/\n# " + "x" * 900 + "\n"
    site.page("/", links=["/private/a"])
    site.page("/private/a", "<html>secret</html>")
    site.page("/robots.txt", head + "Allow: /private/a-area\n", content_type="text/plain")
    max_body = len(head) + len("Allow: /private/a")
    crawl = await crawl_archive(site.url("/"), robots=True, max_tries=1, max_body_size=max_body)
    assert site.hits["/private/a"] == 0
    rules = saved_robots(crawl.archive, "archiver")[origin_of(site.url("/"))]
    assert not rules.verdict(site.url("/private/a"), "archiver", 2).allowed


def torn_jsonl(path: Path, lines: list[dict[str, object]]) -> None:
    """`lines` as JSON lines, the first torn in the middle of a character by a kill and the
    next crawl's line written after it, as a resumed crawl appends."""
    torn = (json.dumps(lines[0], ensure_ascii=False) + "\n").encode()
    cut = torn.index("é".encode()) + 1
    rest = b"".join((json.dumps(line, ensure_ascii=False) + "\n").encode() for line in lines[1:])
    path.write_bytes(torn[:cut] + b"\n" + b"42\n" + rest)


def test_archiver_why_reads_a_crawl_log_with_a_torn_line(tmp_path: Path) -> None:
    url = "http://example.test/b"
    torn_jsonl(
        tmp_path / "crawl-log.jsonl",
        [
            {"url": "http://example.test/é", "outcome": "fetched"},
            {"url": url, "outcome": "failed", "tries": 3},
        ],
    )
    found = find_in_log(tmp_path, url)
    assert found is not None and found["tries"] == 3


def test_saved_robots_reads_a_log_with_a_torn_line(tmp_path: Path) -> None:
    origin = "http://example.test"
    torn_jsonl(
        tmp_path / ROBOTS_LOG_NAME,
        [
            {"origin": "http://other.test", "state": ALLOW_ALL, "note": "café"},
            {"origin": origin, "url": origin + "/robots.txt", "status": 200, "state": RULES, "note": "",
             "body": "User-agent: *\nDisallow: /private/\n"},
        ],
    )  # fmt: skip
    entries = saved_robots(tmp_path, "archiver")
    assert not entries[origin].verdict(origin + "/private/x", "archiver", 2).allowed


def log_line(number: int, size: int) -> bytes:
    """A crawl-log line of exactly `size` bytes, its newline included."""
    line = json.dumps({"url": f"http://example.test/{number}", "status": 200, "bytes": number, "pad": ""})
    line = line.replace('"pad": ""', '"pad": "' + "x" * (size - len(line) - 1) + '"')
    assert len(line) + 1 == size
    return line.encode() + b"\n"


@pytest.mark.parametrize("shift", [-2, -1, 0, 1, 2])
def test_the_status_page_counts_log_lines_across_its_reads(tmp_path: Path, shift: int) -> None:
    """The log is read a MiB at a time: a line ending at, just before or just after a read's
    end, one longer than a read, and the line still being written are each counted once."""
    piece = 1024 * 1024
    sizes = [piece + shift, 300, piece - 300 + shift, 2 * piece + 1000, 200, 100]
    lines = [log_line(n, size) for n, size in enumerate(sizes)]
    path = tmp_path / "crawl-log.jsonl"
    written = b"".join(lines[:-1]) + lines[-1][:50]  # the last line is being written
    path.write_bytes(written)
    follower = LogFollower(path)
    follower.update()
    assert follower.statuses["2xx"] == len(lines) - 1
    assert follower.total_bytes == sum(range(len(lines) - 1))
    assert follower.offset == len(written) - 50
    with path.open("ab") as handle:
        handle.write(lines[-1][50:])
    follower.update()
    assert follower.statuses["2xx"] == len(lines) and follower.total_bytes == sum(range(len(lines)))
    assert [r["bytes"] for r in follower.recent][:3] == [5, 4, 3]
