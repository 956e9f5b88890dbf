"""`archiver changes` over an archive of many WARC files stays under the open-file limit.

The CDXJ files are merged in rounds of at most `MAX_OPEN_FILES`: the command runs in a
child process whose ``RLIMIT_NOFILE`` is far below the number of files.
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc, sort_lines
from archiver_plugins.archive_reader.changes import MAX_OPEN_FILES, sorted_captures
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.history import record_finish, record_start

FILES_PER_CRAWL = 150
OPEN_FILES_LIMIT = 100
FIRST = datetime(2024, 1, 1, tzinfo=UTC)
SECOND = FIRST + timedelta(days=1)


def write_capture(folder: Path, name: str, url: str, when: datetime, body: bytes) -> None:
    """One WARC file holding one response, and its CDXJ index."""
    path = folder / name
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": when.strftime("%Y-%m-%dT%H:%M:%SZ")},
        )
        writer.write_record(record)
    cdxj_path_for(path).write_text("".join(sort_lines(index_warc(path))), encoding="utf-8")


def many_file_archive(archive: Path) -> None:
    """Two crawls, one WARC file per capture: p0..p149, then p0..p149 again (every third
    changed) and q0..q9 added."""
    folder = archive / "warc"
    folder.mkdir(parents=True)
    record_start(archive, "crawl", FIRST)
    for n in range(FILES_PER_CRAWL):
        write_capture(folder, f"a{n:04d}.warc.gz", f"http://many.example/p{n}", FIRST, b"first %d" % n)
    record_finish(archive, 1, FIRST + timedelta(hours=1), complete=True)
    record_start(archive, "crawl", SECOND)
    for n in range(FILES_PER_CRAWL):
        body = b"second %d" % n if n % 3 == 0 else b"first %d" % n
        write_capture(folder, f"b{n:04d}.warc.gz", f"http://many.example/p{n}", SECOND, body)
    for n in range(10):
        write_capture(folder, f"c{n:04d}.warc.gz", f"http://many.example/q{n}", SECOND, b"new")
    record_finish(archive, 2, SECOND + timedelta(hours=1), complete=True)


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES_LIMIT, OPEN_FILES_LIMIT))


def test_changes_over_more_warc_files_than_may_be_open(tmp_path: Path) -> None:
    archive = tmp_path / "many"
    many_file_archive(archive)
    assert 2 * FILES_PER_CRAWL > OPEN_FILES_LIMIT > MAX_OPEN_FILES
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "changes", str(archive), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_few_files,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # before: "Too many open files"
    report = json.loads(done.stdout)
    urls = report["urls"]
    assert {item["url"] for item in urls["added"]} == {f"http://many.example/q{n}" for n in range(10)}
    changed = {item["url"] for item in urls["changed"]}
    assert changed == {f"http://many.example/p{n}" for n in range(0, FILES_PER_CRAWL, 3)}
    assert not urls["removed"]


def test_a_merge_in_rounds_gives_what_one_merge_gives(tmp_path: Path) -> None:
    archive = tmp_path / "many"
    many_file_archive(archive)
    once = [(key, stamp, capture) for key, stamp, capture in sorted_captures(archive / "warc", max_open=1000)]
    assert len(once) == 2 * FILES_PER_CRAWL + 10
    for max_open in (2, 3, 7):
        assert list(sorted_captures(archive / "warc", max_open=max_open)) == once
