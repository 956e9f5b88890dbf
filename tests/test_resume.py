"""Resuming: the archive lock, re-running into an archive, Ctrl-C, and SIGKILL at random moments."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
from archiver_plugins.warc.verify import verify_file
from cli_process import PLUGINS_ONLY, start_archiver
from warcio.archiveiterator import ArchiveIterator

from archiver.errors import ArchiveError, ArchiveLockedError
from archiver.frontier_sqlite import read_counts
from archiver.history import read_history
from archiver.hookspecs import hookimpl
from archiver.layout import STATE_NAME
from archiver.lock import ArchiveLock, read_holder
from archiver.manager import make_plugin_manager
from archiver.model import Crawl, Link, Page
from archiver.resume import plan_run
from archiver.runner import run_crawl
from archiver.status import archive_status
from archiver.testing import CrawlFn, Site, make_config

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "--frontier", "sqlite", "-q"]


async def start_cli(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def run_cli(*args: str) -> tuple[int, str, str]:
    proc = await start_cli(*args)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def captures(archive: Path) -> collections.Counter[str]:
    """How many response or revisit records each URL has in the archive's WARC files."""
    found: collections.Counter[str] = collections.Counter()
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


def rewind(state: Path, in_flight: list[str], forget: Sequence[str] = ()) -> None:
    """Leave `state` as a kill would: `in_flight` taken but not done, `forget` never queued."""
    db = sqlite3.connect(state)
    with db:
        db.executemany("UPDATE urls SET state = 1, taken_at = 0 WHERE key = ?", [(k,) for k in in_flight])
        db.executemany("DELETE FROM urls WHERE key = ?", [(k,) for k in forget])
        for number, name in enumerate(("queued", "in_flight", "done", "failed")):
            db.execute(
                "UPDATE meta SET value = (SELECT count(*) FROM urls WHERE state = ?) WHERE name = ?",
                (number, f"count_{name}"),
            )
    db.close()


# -- the lock ------------------------------------------------------------------------------

_HOLDER = """
import sys, time
from collections.abc import Sequence
from pathlib import Path
from archiver.lock import ArchiveLock
lock = ArchiveLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(60)
"""


async def test_lock_refuses_a_live_holder_and_takes_over_a_dead_one(tmp_path: Path) -> None:
    archive = tmp_path / "a"
    script = tmp_path / "holder.py"
    script.write_text(textwrap.dedent(_HOLDER))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(archive), stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"locked\n"
    with pytest.raises(ArchiveLockedError, match=f"PID {proc.pid}"):
        ArchiveLock(archive).acquire()
    assert archive_status(archive).state == "running"
    proc.kill()
    await proc.wait()
    lock = ArchiveLock(archive).acquire()
    assert lock.took_over is not None and lock.took_over.pid == proc.pid
    holder = read_holder(archive)
    assert holder is not None and holder.pid == os.getpid()
    lock.release()
    assert read_holder(archive) is None
    with ArchiveLock(archive):  # and it can be taken again
        pass


async def test_two_crawls_cannot_write_one_archive(site: Site, tmp_path: Path) -> None:
    site.page("/")
    config = make_config(tmp_path, [site.url("/")], frontier="sqlite")
    with ArchiveLock(Path(config.output)):
        with pytest.raises(ArchiveLockedError):
            await run_crawl(config, make_plugin_manager(autoload=False))
        with pytest.raises(ArchiveLockedError):
            plan_run(config)
    assert site.hits.total() == 0


# -- re-running into an archive ------------------------------------------------------------


async def test_complete_archive_does_nothing_unless_recrawl(site: Site, tmp_path: Path) -> None:
    site.loose_web(20)
    archive = str(tmp_path / "a")
    args = ["crawl", site.url("/p0"), "-o", archive, *FAST, *PLUGINS]
    code, _, err = await run_cli(*args)
    assert code == 0, err
    first = site.hits.total()
    code, out, _ = await run_cli(*args)
    assert code == 0
    assert f"holds a complete crawl ({first} done, 0 failed): nothing to do" in out
    assert site.hits.total() == first
    code, _, err = await run_cli(*args, "--recrawl")
    assert code == 0, err
    assert site.hits.total() == 2 * first
    assert "again from its roots" in err or err == ""


async def test_a_url_that_is_not_a_root_of_the_archive_is_refused(
    site: Site, other_site: Site, tmp_path: Path
) -> None:
    """A URL of another site into an existing archive is a wrong folder, not "nothing to do"
    (complete archive) nor one more root of the interrupted crawl (resumable archive)."""
    site.loose_web(5)
    other_site.page("/")
    archive = tmp_path / "a"
    code, _, err = await run_cli("crawl", site.url("/p0"), "-o", str(archive), *FAST, *PLUGINS)
    assert code == 0, err
    first = site.hits.total()
    wrong = ["crawl", other_site.url("/"), "-o", str(archive), *FAST, *PLUGINS]

    code, out, err = await run_cli(*wrong)
    assert code == 2 and out == ""
    assert err == (
        f"archiver: error: {other_site.url('/')} is not a root of the crawl in {archive}"
        f" ({site.url('/p0')}): crawl it into a new folder (-o NEW), or crawl {archive} again"
        " from the URLs given with --recrawl\n"
    )

    rewind(archive / STATE_NAME, [site.url("/p3")])
    assert archive_status(archive).state == "resumable"
    code, out, err = await run_cli(*wrong)
    assert code == 2 and "is not a root of the crawl in" in err
    assert other_site.hits.total() == 0 and site.hits.total() == first
    assert archive_status(archive).state == "resumable"

    code, _, err = await run_cli("crawl", site.url("/p0"), "-o", str(archive), *FAST, *PLUGINS)
    assert code == 0, err  # the same root resumes
    code, _, err = await run_cli(*wrong, "--recrawl")
    assert code == 0, err
    assert other_site.hits["/"] == 1


def test_memory_frontier_archive_cannot_resume(tmp_path: Path) -> None:
    config = make_config(tmp_path, ["http://127.0.0.1:9/"], frontier="memory")
    (Path(config.output)).mkdir()
    (Path(config.output) / "crawl.toml").write_text("[crawl]\n")
    with pytest.raises(Exception, match="kept no state"):
        plan_run(config)
    assert plan_run(config, recrawl=True)[0] is True


# -- reconciliation with the WARC files ----------------------------------------------------


async def test_archived_but_not_marked_done_is_not_fetched_again(site: Site, crawl_archive: CrawlFn) -> None:
    """Killed between the WARC write and `done`: resume takes the page from the WARC, links included."""
    site.page("/", links=["/a", "/b", "/moved"])
    site.page("/a", links=["/a1", "/a2"])
    site.page("/b")
    site.redirect("/moved", "/target")
    for path in ("/a1", "/a2", "/target"):
        site.page(path)
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"), frontier="sqlite")
    assert set(site.hits.values()) == {1}
    # Rewind the state as a kill would leave it: /a and /moved archived but still in flight,
    # and what they linked to never queued.
    rewind(
        crawl.archive / STATE_NAME,
        [site.url("/a"), site.url("/moved")],
        [site.url("/a1"), site.url("/a2"), site.url("/target")],
    )
    assert archive_status(crawl.archive).state == "resumable"
    again = await crawl_archive(site.url("/"), plugins=("links", "warc"), frontier="sqlite")
    assert again.resumed
    assert again.stats["resume_from_warc"] == 2
    assert site.hits["/a"] == 1 and site.hits["/moved"] == 1  # not fetched again
    assert site.hits["/a1"] == 2 and site.hits["/target"] == 2  # re-discovered from the stored pages
    assert archive_status(crawl.archive).state == "complete"


async def test_hook_archived_pages(site: Site, crawl_archive: CrawlFn) -> None:
    """Any plugin can answer for its own storage; the core takes its pages as archived."""
    site.page("/", links=["/a"])
    site.page("/a", links=["/b"])
    site.page("/b")
    crawl = await crawl_archive(site.url("/"), plugins=("links",), frontier="sqlite")
    rewind(crawl.archive / STATE_NAME, [site.url("/a")], [site.url("/b")])
    asked: list[tuple[list[str], float]] = []

    class Store:
        @hookimpl
        async def archived_pages(self, urls: Sequence[str], since: float, crawl: Crawl) -> list[Page]:
            asked.append((list(urls), since))
            body = b'<a href="/b">b</a>'
            return [Page(url=site.url("/a"), status=200, headers=(("Content-Type", "text/html"),), body=body)]

    again = await crawl_archive(site.url("/"), plugins=("links",), extra=[Store()], frontier="sqlite")
    assert asked == [([site.url("/a")], 0.0)]
    assert again.stats["resume_from_warc"] == 1
    assert site.hits["/a"] == 1 and site.hits["/b"] == 2


async def test_in_flight_without_a_record_is_fetched_again(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a"])
    site.page("/a")
    crawl = await crawl_archive(site.url("/"), plugins=("links",), frontier="sqlite")
    rewind(crawl.archive / STATE_NAME, [site.url("/a")])
    again = await crawl_archive(site.url("/"), plugins=("links",), frontier="sqlite")
    assert again.resumed and again.stats["resume_in_flight"] == 1
    assert site.hits["/a"] == 2 and site.hits["/"] == 1


# -- Ctrl-C and SIGKILL against the real command -------------------------------------------


LEAVES_WORK = """
import asyncio
from pathlib import Path

from archiver.hookspecs import hookimpl


@hookimpl
async def crawl_finished(crawl):
    Path("catching-up").touch()
    while not crawl.interrupted:
        await asyncio.sleep(0.01)
    crawl.left_to_do.append("7 pages wait for the catch-up; `finish-it A` takes them in")
"""


async def test_ctrl_c_after_the_last_page_names_what_is_left_not_a_resume(site: Site, tmp_path: Path) -> None:
    site.page("/")
    (tmp_path / "leaves_work.py").write_text(LEAVES_WORK)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", archive, *FAST[:-1], *PLUGINS, "--plugin", "leaves_work"]
    proc = await start_archiver(*args, cwd=tmp_path, env={PLUGINS_ONLY: "1"}, output=subprocess.PIPE)
    for _ in range(1000):
        if (tmp_path / "catching-up").exists():
            break
        await asyncio.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    lines = out.decode().splitlines()
    assert proc.returncode == 130, lines
    assert lines[-1] == (
        "Interrupted after the last page: 7 pages wait for the catch-up; `finish-it A` takes them in."
    )
    assert not any("run the same command again" in line for line in lines)


async def test_sigint_then_resume_fetches_each_page_once(site: Site, tmp_path: Path) -> None:
    site.loose_web(120, delay=0.02)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/p0"), "-o", str(archive), *FAST[:-1], *PLUGINS, "--max-tasks", "2"]
    proc = await start_cli(*args)
    for _ in range(300):
        await asyncio.sleep(0.05)
        if site.hits.total() > 20:
            break
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err.decode()
    lines = err.decode().splitlines()
    # what the user is told, as docs/resume.md shows it: plain lines, no logger prefix
    assert "stopping: finishing in-flight fetches (up to 5 s)" in lines, lines
    assert lines[-1] == f"Interrupted: run the same command again to resume into {archive}."
    assert "archiver: warning: robots.txt is ignored for this crawl (--ignore-robots)" in lines
    assert not any(line.startswith(("WARNING", "INFO")) for line in lines), lines
    status = archive_status(archive)
    assert status.state == "resumable"
    assert status.counts.in_flight == 0  # in-flight fetches finished in the grace period
    code, _, err2 = await run_cli("crawl", "--resume", str(archive), "-q")
    assert code == 0, err2
    assert "Resuming the crawl" not in err2  # -q
    assert archive_status(archive).state == "complete"
    counts = captures(archive)
    assert max(counts.values()) == 1
    assert set(site.hits.values()) == {1}
    assert len(counts) == len(site.hits)


async def test_sigkill_at_random_moments_loses_and_duplicates_nothing(
    site: Site, tmp_path: Path, crawl_archive: CrawlFn
) -> None:
    pages = 300
    site.loose_web(pages, delay=0.005)
    reference = await crawl_archive(site.url("/p0"), plugins=("links", "warc"), frontier="memory")
    expected = set(captures(reference.archive))
    site.hits.clear()

    archive = tmp_path / "killed"
    args = ["crawl", site.url("/p0"), "-o", str(archive), *FAST, *PLUGINS, "--max-tasks", "4"]
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    kills = 0
    for _ in range(4):
        before = site.hits.total()
        wanted = before + rng.randint(5, 60)
        proc = await start_cli(*args)
        while proc.returncode is None and site.hits.total() < wanted:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 0.005)
        if proc.returncode is None:
            await asyncio.sleep(rng.uniform(0, 0.05))
            if proc.returncode is None:
                proc.kill()
                kills += 1
        await proc.communicate()
    code, _, err = await run_cli(*args)
    assert code == 0, err

    assert kills >= 3, f"seed {seed}"
    assert archive_status(archive).state == "complete"
    counts = captures(archive)
    assert set(counts) == expected, f"seed {seed}"
    assert max(counts.values()) == 1, f"seed {seed}: {[u for u, n in counts.items() if n > 1]}"
    assert not list((archive / "warc").glob("*.open"))
    for path in (archive / "warc").glob("*.warc.gz"):
        report = verify_file(path)
        assert report.ok, [str(f) for f in report.faults]
    saved = read_counts(archive / STATE_NAME)
    assert saved.done + saved.failed == saved.seen == len(expected)


class CatchingUp:
    """A plugin that handles pages after the last one (as the index does), whose first
    catch-up fails as a full disk fails it, leaving `left` pages waiting."""

    def __init__(self) -> None:
        self.left = 0
        self.runs = 0

    @hookimpl
    async def crawl_started(self, crawl: Crawl) -> None:
        self.runs += 1
        crawl.stats["lag.pending"] = self.left

    @hookimpl
    async def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        self.left += 1
        crawl.stats["lag.pending"] = self.left

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        if self.runs == 1:
            raise ArchiveError("no space left on device")
        self.left = crawl.stats["lag.pending"] = 0


async def test_a_catch_up_that_failed_leaves_the_crawl_resumable(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    """Issue 42 point 10: a full disk during the index catch-up ended a crawl "complete" with
    pages unindexed, and the `--resume` its message named did nothing; now it is resumable
    and the resume catches up."""
    site.page("/", links=["/a", "/b"])
    site.page("/a")
    site.page("/b")
    plugin = CatchingUp()
    with pytest.raises(ArchiveError, match="no space left"):
        await crawl_archive(site.url("/"), plugins=("links",), extra=[plugin], frontier="sqlite")
    assert archive_status(tmp_path / "archive").state == "resumable"
    again = await crawl_archive(site.url("/"), plugins=("links",), extra=[plugin], frontier="sqlite")
    assert again.resumed and plugin.runs == 2
    assert again.complete and again.stats["lag.pending"] == 0
    assert set(site.hits.values()) == {1}  # nothing fetched twice
    assert [run.complete for run in read_history(again.archive)] == [True]
