"""Counts in words: one noun for one thing (`1 page`, `2 pages`), sizes in decimal units, and a
list cut short that says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from archiver_plugins.qa.commands import headline
from archiver_plugins.qa.results import Summary

from archiver.config import Config
from archiver.queue_view import HostQueue, QueueView, view_lines
from archiver.why import dry_run_header


def test_qa_counts_one_page_and_one_resource_in_the_singular() -> None:
    summary = Summary(checked=1, complete=1, missing_urls={"http://x/a.css": "stylesheet"})
    assert headline(Path("A"), 3, summary) == "QA run 3 of A: 1 page checked, 1 complete, 1 resource missing."
    many = Summary(checked=1200, complete=1100)
    assert "1,200 pages checked, 1,100 complete, 0 resources missing" in headline(Path("A"), 1, many)


def test_the_queue_by_host_says_it_lists_only_some_of_them() -> None:
    hosts = [HostQueue(f"h{i}.example", 10 - i) for i in range(5)]
    lines = view_lines(QueueView(read=100, hosts=hosts, total_hosts=40), "A", 100)
    assert lines[0] == "  queue by host: 40 hosts, the 5 with most to fetch"
    assert lines[1] == "    h0.example: 10 to fetch"  # queued and in flight: not the count called queued
    one = view_lines(QueueView(read=3, hosts=hosts[:1], total_hosts=1), "A", 3)
    assert one[0] == "  queue by host: 1 host"


def test_the_dry_run_gives_the_body_cap_in_decimal_units() -> None:
    header = dry_run_header(Config(roots=("http://127.0.0.1:9/",), output="A", robots=False))
    assert "body 67.1 MB," in header and "67108864" not in header


def test_warc_check_counts_one_file_in_the_singular(tmp_path: Path) -> None:
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "one.warc.gz"
    with path.open("wb") as handle:
        WARCWriter(handle, gzip=True).write_record(
            WARCWriter(handle, gzip=True).create_warcinfo_record("one.warc.gz", {"software": "test"})
        )
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", "warc", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "1 WARC file ok"


def test_status_counts_read_as_the_queue_lines_do() -> None:
    from archiver.model import Counts
    from archiver.status import RESUMABLE, ArchiveStatus, describe

    status = ArchiveStatus(Path("A"), RESUMABLE, Counts(done=12_345, queued=2_000, failed=1_001))
    assert "  done 12,345, queued 2,000, failed 1,001" in describe(status).splitlines()
