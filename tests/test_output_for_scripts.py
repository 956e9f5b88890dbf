"""Output for scripts: into a pipe whose reader has gone (`archiver search A q | head -1`), a quiet
exit 0; `--json` and `-q` on every command that prints.

Scripts under `set -o pipefail` stop on any member of a pipeline that fails; a reader that
took what it wanted and left is no failure of the command that wrote.
"""

from __future__ import annotations

import json
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


# -- --json and -q on every command that prints ------------------------------------------------


def run(*args: str | Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", *PLUGINS, *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout, proc.stderr


async def test_reindex_takes_json_and_quiet(archive: Path) -> None:
    code, out, err = run("reindex", archive, "--json", "--processes", "1")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["indexed"] == 41 and summary["warc_files"] >= 1 and summary["unreadable_records"] == 0
    assert err == ""  # no progress lines
    assert run("reindex", archive, "-q", "--processes", "1") == (0, "", "")
    code, out, err = run("reindex", "--pending", archive, "--json")
    assert (code, json.loads(out), err) == (0, {"archive": str(archive), "indexed": 0}, "")


async def test_warc_check_takes_json(archive: Path) -> None:
    code, out, err = run("warc", "check", archive, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["faults"] == 0 and report["damaged_files"] == 0
    assert all(entry["faults"] == [] and entry["records"] > 0 for entry in report["files"])
    assert all(entry["size"] > 0 for entry in report["files"])
    first = report["files"][0]
    os.truncate(first["path"], first["size"] - 7)  # the last record cut short
    code, out, err = run("warc", "check", archive, "--json")
    assert code == 1
    report = json.loads(out)  # the faults in the object, the one-line error on stderr
    assert report["faults"] >= 1 and report["files"][0]["faults"]
    assert err.startswith("archiver: error: ") and err.count("\n") == 1


async def test_warc_ls_quiet_lists_the_urls_only(archive: Path, site: Site) -> None:
    code, out, err = run("warc", "ls", archive, "-q")
    assert code == 0, err
    urls = out.splitlines()
    assert site.url("/") in urls and site.url("/p39") in urls
    assert all(url.startswith("http://") and " " not in url for url in urls)


async def test_why_quiet_answers_with_its_exit_status_only(archive: Path, site: Site) -> None:
    assert run("why", archive, site.url("/p1"), "-q") == (0, "", "")
    assert run("why", archive, site.url("/p1"), "http://elsewhere.example/", "-q") == (1, "", "")
