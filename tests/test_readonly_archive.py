"""A read-only archive: commands that write say so in one line; commands that read work.

The archive is read-only for an unprivileged user: the commands run as ``nobody``
(through setpriv) when the tests run as root, as the current user on a chmod-ed copy
otherwise.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archiver.testing import CrawlFn, Site

PLUGINS = ("links", "warc", "index")
NOBODY = 65534


def _as_unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        if os.environ.get("CI") == "true":
            pytest.fail("setpriv is needed to run commands as an unprivileged user")
        pytest.skip("running as root without setpriv: cannot drop privileges")
    command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run(
        [*command, sys.executable, "-c", "import archiver_plugins.warc"],
        capture_output=True,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if probe.returncode != 0:  # the project lies where nobody may not read it (e.g. under /root)
        message = f"user {NOBODY} cannot run this checkout's Python: {probe.stderr.decode()[-200:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return command


def _read_only(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            mode = path.lstat().st_mode
            path.chmod(stat.S_IMODE(mode) & ~0o222 | 0o444 | (0o111 if stat.S_ISDIR(mode) else 0))
    root.chmod(0o555)


def _copy_read_only(source: Path) -> Path:
    place = Path(tempfile.mkdtemp(prefix="archiver-ro-"))
    place.chmod(0o755)
    archive = place / "archive"
    shutil.copytree(source, archive)
    warc = next((archive / "warc").glob("*.warc.gz"))
    with warc.open("ab") as handle:
        handle.write(b"\x1f\x8b\x08\x00garbage")  # a damaged tail for `warc check --truncate`
    _read_only(archive)
    return archive


def _remove(place: Path) -> None:
    for folder, dirs, _files in os.walk(place):
        for name in dirs:
            Path(folder, name).chmod(0o755)
    place.chmod(0o755)
    shutil.rmtree(place)


@pytest.fixture
async def read_only(site: Site, crawl_archive: CrawlFn) -> AsyncIterator[Path]:
    site.page("/", '<title>Home</title><a href="/a">a</a> zebra')
    site.page("/a", "<title>A</title> zebra")
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    archive = _copy_read_only(crawl.archive)
    yield archive
    _remove(archive.parent)


def _run(archive: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [*_as_unprivileged(), sys.executable, "-m", "archiver", *map(str, args)]
    env = {**os.environ, "HOME": str(archive.parent)}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=archive.parent, env=env, check=False
    )


WRITERS = {
    "warc check --truncate": ["warc", "check", "--truncate", "{a}"],
    "reindex": ["reindex", "{a}"],
    "reindex --pending": ["reindex", "--pending", "{a}"],
    "reindex --warc": ["reindex", "--warc", "{warc}", "-o", "{a}"],
    "export to an unwritable folder": ["export", "{a}", "/root/x"],
    "crawl --resume --recrawl": ["crawl", "--resume", "{a}", "--recrawl"],
}


async def test_writers_say_read_only(read_only: Path) -> None:
    warc = next((read_only / "warc").glob("*.warc.gz"))
    for label, template in WRITERS.items():
        args = [part.format(a=read_only, warc=warc) for part in template]
        done = _run(read_only, *args)
        assert "Traceback" not in done.stderr, (label, done.stderr)
        assert done.returncode == 1, (label, done.returncode, done.stdout, done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("archiver: error:")]
        said = "Permission denied" if label.startswith("export") else "read-only"
        assert len(errors) == 1 and said in errors[0], (label, done.stderr)
        assert "not a crawl state database" not in done.stderr, label


async def test_readers_work_on_a_read_only_archive(read_only: Path) -> None:
    done = _run(read_only, "status", read_only)
    assert done.returncode == 0 and "not a crawl state database" not in done.stderr, done.stderr
    assert "complete" in done.stdout, done.stdout
    done = _run(read_only, "warc", "ls", read_only)
    assert done.returncode == 0 and "/a" in done.stdout, done.stderr
    done = _run(read_only, "search", read_only, "zebra")
    assert done.returncode == 0 and "2 pages match" in done.stdout, (done.stdout, done.stderr)
    _export_elsewhere(read_only)


def _export_elsewhere(archive: Path) -> None:
    out = Path(tempfile.mkdtemp(prefix="archiver-out-"))
    out.chmod(0o777)
    try:
        done = _run(archive, "export", archive, out / "x")
        assert done.returncode == 0, done.stderr
        assert (out / "x" / "index.html").is_file()
    finally:
        shutil.rmtree(out)
