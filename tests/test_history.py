"""The crawl history numbers crawls and survives torn and foreign lines."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from archiver.cli import main
from archiver.history import read_history, record_finish, record_resume, record_start
from archiver.layout import HISTORY_NAME
from archiver.testing import Site

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_crawls_are_numbered_and_resumes_keep_their_number(tmp_path: Path) -> None:
    first = record_start(tmp_path, "crawl", T0)
    record_finish(tmp_path, first.number, T0 + timedelta(minutes=1), complete=False)
    resumed = record_resume(tmp_path, T0 + timedelta(minutes=2))
    record_finish(tmp_path, resumed.number, T0 + timedelta(minutes=3), complete=True)
    second = record_start(tmp_path, "update", T0 + timedelta(days=7))

    runs = read_history(tmp_path)
    assert [(run.number, run.mode) for run in runs] == [(1, "crawl"), (2, "update")]
    assert (first.number, resumed.number, second.number) == (1, 1, 2)
    assert runs[0].resumes == 1 and runs[0].complete and runs[0].finished == T0 + timedelta(minutes=3)
    assert runs[1].finished is None and not runs[1].complete


def test_a_capture_belongs_to_the_crawl_whose_span_holds_it(tmp_path: Path) -> None:
    record_start(tmp_path, "crawl", T0)
    record_start(tmp_path, "recrawl", T0 + timedelta(days=1))
    first, second = read_history(tmp_path)
    inside_first = T0 + timedelta(hours=5)
    assert first.holds(inside_first, second.started) and not second.holds(inside_first, None)
    assert second.holds(T0 + timedelta(days=2), None)


def test_torn_and_foreign_lines_are_ignored(tmp_path: Path) -> None:
    record_start(tmp_path, "crawl", T0)
    with (tmp_path / HISTORY_NAME).open("a") as file:
        file.write('["not", "an", "event"]\n{"event": "start", "crawl": 0, "mode": "crawl", "at": "x"}\n')
        file.write('{"event": "start", "crawl": 2, "mode": "teleport", "at": "2026-01-02T00:00:00+00:00"}\n')
        file.write('{"event": "finish", "crawl": 1, "at": "2026-01-0')
    assert [(run.number, run.complete) for run in read_history(tmp_path)] == [(1, False)]
    assert record_start(tmp_path, "update", T0 + timedelta(days=3)).number == 2
    assert [run.number for run in read_history(tmp_path)] == [1, 2]


def test_no_history_file_is_no_crawl(tmp_path: Path) -> None:
    assert read_history(tmp_path) == []
    assert record_resume(tmp_path, T0).number == 1


async def test_crawl_and_recrawl_are_numbered_in_the_archive(site: Site, tmp_path: Path) -> None:
    """A crawl writes its start and finish; --recrawl starts crawl 2."""
    site.page("/", links=["/b"])
    site.page("/b")
    archive = tmp_path / "a"
    for extra in ([], ["--recrawl"]):
        args = ["crawl", site.url("/"), "-o", str(archive), "-q", "--delay", "0", "--ignore-robots", *extra]
        assert await asyncio.to_thread(main, [*args, "--disable-plugin", "index"]) == 0
    runs = read_history(archive)
    assert [(run.number, run.mode, run.complete) for run in runs] == [
        (1, "crawl", True),
        (2, "recrawl", True),
    ]
    assert runs[0].finished is not None and runs[0].finished <= runs[1].started
