"""Output into a pipe whose reader has gone (`archiver search A q | head -1`): a quiet exit 0.

Scripts under `set -o pipefail` stop on any member of a pipeline that fails; a reader that
took what it wanted and left is no failure of the command that wrote.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.testing import CrawlFn, Site

pytestmark = pytest.mark.timeout(90)

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.warc", "--plugin", "archiver_plugins.index"]


def into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run `archiver ARGS` with its standard output a pipe nobody reads any more: (code, stderr)."""
    reader, writer = os.pipe()
    os.close(reader)  # as `head -1` after its line: every write from now on meets EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "archiver", *args],
            stdout=writer,
            stderr=subprocess.PIPE,
            env=ENV,
            timeout=60,
        )
    finally:
        os.close(writer)
    return proc.returncode, proc.stderr.decode()


@pytest.fixture
async def archive(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> Path:
    pages = [f"/p{i}" for i in range(40)]
    site.page("/", links=pages)
    for page in pages:
        site.page(page, f"<p>common words of page {page}</p>")
    await crawl_archive(site.url("/"), plugins=("links", "warc", "index"))
    return tmp_path / "archive"


@pytest.mark.parametrize(
    "command",
    [["warc", "ls", "{archive}"], ["search", "{archive}", "common"], ["status", "{archive}"]],
    ids=["warc-ls", "search", "status"],
)
async def test_a_reader_gone_from_the_pipe_is_a_quiet_exit_0(archive: Path, command: list[str]) -> None:
    code, err = into_closed_pipe(*PLUGINS, *(part.format(archive=archive) for part in command))
    assert (code, err) == (0, "")
