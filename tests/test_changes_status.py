"""`archiver status` lists the archive's numbered crawls: mode, when each ran, how it ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from changing_site import crawl_twice
from click.testing import CliRunner

from archiver.commands.status import status_command
from archiver.history import read_history, record_start
from archiver.layout import HISTORY_NAME
from archiver.testing import Site


def status(archive: Path, *args: str) -> str:
    result = CliRunner().invoke(status_command, [str(archive), *args])
    assert result.exit_code == 0, result.output
    return result.output


async def test_status_shows_each_crawl(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    first, second = read_history(archive)
    assert first.finished is not None and second.finished is not None
    record_start(archive, "update", datetime.now(UTC))  # killed before it wrote its finish

    lines = status(archive).splitlines()
    assert lines[0] == f"{archive}: complete"
    crawls = [line for line in lines if line.startswith("  crawl ")]
    assert crawls[0] == (
        f"  crawl 1 (crawl): started {first.started.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC,"
        f" finished {first.finished.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC, complete"
    )
    assert crawls[1].startswith("  crawl 2 (recrawl): started ") and crawls[1].endswith(", complete")
    assert crawls[2].startswith("  crawl 3 (update): started ") and crawls[2].endswith(", interrupted")
    assert "finished" not in crawls[2]

    found = json.loads(status(archive, "--json"))["crawls"]
    assert [(c["crawl"], c["mode"], c["state"], c["complete"]) for c in found] == [
        (1, "crawl", "complete", True),
        (2, "recrawl", "complete", True),
        (3, "update", "interrupted", False),
    ]
    assert found[0]["started"] == first.started.isoformat() and found[2]["finished"] is None


async def test_status_without_history_lists_no_crawl(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    (archive / HISTORY_NAME).unlink()
    assert "  crawl " not in status(archive)
    assert json.loads(status(archive, "--json"))["crawls"] == []
