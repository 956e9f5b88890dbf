"""A resumed crawl reads the CDXJ of WARC files its dedup table does not know, damaged lines and all."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.api import DEDUP_NAME
from archiver.testing import CrawlFn, Site


def _record_types(archive: Path) -> dict[str, str]:
    types = {}
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with gzip.open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    types[record.rec_headers.get_header("WARC-Target-URI")] = record.rec_type
    return types


async def test_resume_skips_a_garbage_cdxj_line_and_names_it(
    site: Site, crawl_archive: CrawlFn, caplog: pytest.LogCaptureFixture
) -> None:
    site.page("/", links=["/a", "/b"])
    site.page("/a", "the same words")
    site.page("/b", "the same words")
    options = {"plugins": ("links", "warc"), "frontier": "sqlite", "max_tasks": 1, "per_host_concurrency": 1}
    first = await crawl_archive(site.url("/"), max_pages=2, **options)
    archive = first.archive
    (cdxj,) = (archive / "warc").glob("*.cdxj")
    lines = cdxj.read_text().splitlines()
    lines.insert(1, "garbage {not json")
    cdxj.write_text("\n".join(lines) + "\n")
    (archive / DEDUP_NAME).unlink()  # a table that does not know the file reads its CDXJ
    with caplog.at_level(logging.WARNING):
        # /b, left out by max_pages, is now a root: its payload is /a's
        resumed = await crawl_archive([site.url("/"), site.url("/b")], max_pages=0, **options)
    assert resumed.resumed and resumed.complete
    warnings = [r.getMessage() for r in caplog.records if "not a CDXJ line" in r.getMessage()]
    assert len(warnings) == 1 and f"{cdxj}: line 2:" in warnings[0]
    types = _record_types(archive)
    assert types[site.url("/a")] == "response" and types[site.url("/b")] == "revisit"
