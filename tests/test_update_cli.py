"""``archiver crawl --update`` from the command line: killed with SIGKILL, then the same command again."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from pathlib import Path

from aiohttp import web
from test_resume import FAST, PLUGINS, captures, run_cli, start_cli

from archiver.history import read_history
from archiver.layout import HISTORY_NAME
from archiver.runner import human_summary
from archiver.status import archive_status
from archiver.testing import Handler, Site


def build_tagged_site(site: Site, pages: int) -> None:
    """`pages` pages in a ring with shortcuts, each with a strong ETag, answering 304 when it matches."""

    def handler(i: int) -> Handler:
        links = sorted({f"/p{(i + 1) % pages}", f"/p{(i * 7 + 3) % pages}"})
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = f"<html><head><title>page {i}</title></head><body><p>Page {i}.</p>{anchors}</body></html>"
        tag = '"' + hashlib.sha1(body.encode()).hexdigest()[:12] + '"'

        async def serve(request: web.Request) -> web.StreamResponse:
            await asyncio.sleep(0.01)
            if request.headers.get("If-None-Match") == tag:
                return web.Response(status=304, headers={"ETag": tag})
            return web.Response(text=body, content_type="text/html", headers={"ETag": tag})

        return serve

    for i in range(pages):
        site.handler(f"/p{i}", handler(i))


async def test_sigkill_during_an_update_then_the_same_command_resumes_it(site: Site, tmp_path: Path) -> None:
    pages = 150
    build_tagged_site(site, pages)
    archive = tmp_path / "a"
    code, _, err = await run_cli(
        "crawl", site.url("/p0"), "-o", str(archive), *FAST, *PLUGINS, "--max-tasks", "4"
    )
    assert code == 0, err
    report = json.loads((archive / "report.json").read_text())
    (archive / HISTORY_NAME).unlink()  # as an archive made before crawls were numbered
    site.hits.clear()
    await asyncio.sleep(1.1)  # captures are dated to the second: the update's are all later

    update = ["crawl", "--update", str(archive), "-q"]
    proc = await start_cli(*update)
    while proc.returncode is None and site.hits.total() < 60:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.005)
    assert proc.returncode is None, "the update ended before it could be killed"
    proc.kill()
    await proc.communicate()
    assert archive_status(archive).state == "resumable"
    code, _, err = await run_cli(*update)
    assert code == 0, err

    runs = read_history(archive)
    assert [(r.number, r.mode, r.complete) for r in runs] == [(1, "crawl", True), (2, "update", True)]
    assert runs[0].started.isoformat() == report["started_at"]
    assert runs[1].resumes == 1
    counts = captures(archive)
    assert len(counts) == pages and set(counts.values()) == {2}  # one capture per crawl, none twice
    assert archive_status(archive).state == "complete"

    code, _, err = await run_cli("crawl", site.url("/p0"), "-o", str(archive), *FAST, *PLUGINS, "--update")
    assert code == 0, err
    summary = human_summary(json.loads((archive / "report.json").read_text()))
    assert f"Not modified since the last crawl: {pages} (304" in summary
    assert [r.mode for r in read_history(archive)] == ["crawl", "update", "update"]
    assert set(captures(archive).values()) == {3}


async def test_update_of_a_missing_archive_says_so(tmp_path: Path) -> None:
    """`--update ARCHIVE` of a folder that holds no archive is a mistaken name, not a crawl with
    "nothing to resume": the error says how a new archive is made."""
    missing = tmp_path / "nope"
    code, out, err = await run_cli("crawl", "--update", str(missing))
    assert (code, out) == (2, "")
    assert err == (
        f"archiver: error: no archive at {missing}; --update ARCHIVE crawls an existing archive again."
        f" To make a new one: archiver crawl URL -o {missing}\n"
    )
    (tmp_path / "empty").mkdir()
    code, _, err = await run_cli("crawl", "--update", str(tmp_path / "empty"))
    assert code == 2 and "not an archive (no crawl.toml)" in err
    code, _, err = await run_cli("crawl", "--resume", str(missing))
    assert code == 2 and "nothing to resume" in err
    assert not missing.exists()


async def test_update_by_url_says_which_saved_settings_its_command_line_replaces(
    site: Site, tmp_path: Path
) -> None:
    """`crawl --update URL -o ARCHIVE` takes its settings from the command line, as a first crawl
    does: a `--delay 0` the archive was made with is said to be replaced, not silently lost."""
    from terminal import run_on_terminal, screen_lines

    site.page("/", links=["/a"])
    site.page("/a", "a")
    archive = tmp_path / "a"
    plugins = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(archive), "--delay", "0", "--max-tasks", "3", "-q", *plugins
    )
    assert code == 0, err
    args = ["crawl", "--update", site.url("/"), "-o", str(archive), "--ignore-robots", *plugins]
    code, output = await asyncio.to_thread(run_on_terminal, args, tmp_path, 60)
    assert code == 0, output
    said = [line for line in screen_lines(output) if "replaces settings" in line]
    assert len(said) == 1, output
    assert said[0].startswith(f"archiver: warning: this command line replaces settings saved in {archive}:")
    for change in (
        "[politeness] delay 0 -> auto",
        "[crawl] max_tasks 3 -> 10",
        "[politeness] robots True -> False",
    ):
        assert change in said[0]
    assert f"`archiver crawl --update {archive}` alone keeps the saved ones" in said[0]
    code, output = await asyncio.to_thread(run_on_terminal, ["crawl", "--update", str(archive)], tmp_path, 60)
    assert code == 0, output
    assert "replaces settings" not in output
