"""`archiver status ARCHIVE`: states, counts, --json, plugin lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from archiver.commands.status import status_command
from archiver.errors import ArchiverError
from archiver.frontier import Item
from archiver.frontier_sqlite import SqliteFrontier
from archiver.layout import LOCK_NAME, STATE_NAME
from archiver.status import archive_status
from archiver.testing import CrawlFn, Site


def status(archive: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(status_command, [str(archive), *args])
    if isinstance(result.exception, ArchiverError):
        return result.exception.exit_code, str(result.exception)
    return result.exit_code, result.output


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def interrupted_archive(archive: Path) -> None:
    """An archive left with 1 URL done, 1 in flight and 2 queued."""
    write(archive / "crawl.toml", "[crawl]\n")
    frontier = SqliteFrontier(archive / STATE_NAME)
    await frontier.open()
    await frontier.add([(f"http://h/{n}", Item(f"http://h/{n}")) for n in "abcd"])
    first, _second = await frontier.get(), await frontier.get()
    assert first is not None
    await frontier.done(first)
    await frontier.close()


async def test_interrupted_archive_is_resumable(tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await interrupted_archive(archive)
    code, out = status(archive)
    assert code == 0
    assert "resumable: run `archiver crawl --resume" in out
    assert "done 1, queued 2, failed 0, being fetched when it stopped 1" in out
    code, out = status(archive, "--json")
    data = json.loads(out)
    assert (data["state"], data["done"], data["queued"], data["in_flight"]) == ("resumable", 1, 2, 1)
    assert data["frontier"] == "sqlite" and data["pid"] is None


async def test_a_killed_crawl_counts_only_the_urls_it_had_begun_as_in_flight(tmp_path: Path) -> None:
    """A kill leaves a whole leased batch in flight on disk: the URLs no worker had begun were
    never fetched, so they count as queued, not as "fetched again"."""
    archive = tmp_path / "a"
    write(archive / "crawl.toml", "[crawl]\n")
    frontier = SqliteFrontier(archive / STATE_NAME)
    await frontier.open()
    await frontier.add([(f"http://h/{n}", Item(f"http://h/{n}")) for n in "abcdef"])
    first, _second = await frontier.get(), await frontier.get()  # the whole batch is leased
    assert first is not None
    await frontier.done(first)
    await frontier.flush()  # the last commit before the kill: no close()
    code, out = status(archive)
    assert code == 0
    assert "done 1, queued 4, failed 0, being fetched when it stopped 1" in out, out
    await frontier.close()


async def test_complete_archive(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a", "/nope"])
    site.page("/a")
    crawl = await crawl_archive(site.url("/"), plugins=("links",), frontier="sqlite")
    code, out = status(crawl.archive)
    assert code == 0
    assert out.splitlines()[0].endswith(": complete")
    assert "done 3, queued 0, failed 0" in out


async def test_stale_lock_is_reported(tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await interrupted_archive(archive)
    write(archive / LOCK_NAME, "pid=999999\nhost=elsewhere\nsince=0\n")
    found = archive_status(archive)
    assert found.state == "resumable" and found.stale_lock
    assert "stale lock of PID 999999" in status(archive)[1]


def test_missing_and_foreign_folders(tmp_path: Path) -> None:
    code, out = status(tmp_path / "nowhere")
    assert code == 2 and "no archive at" in out
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("hi")
    with pytest.raises(Exception, match="is not an archive"):
        archive_status(tmp_path / "stuff")
    (tmp_path / "empty").mkdir()
    assert archive_status(tmp_path / "empty").state == "new"
