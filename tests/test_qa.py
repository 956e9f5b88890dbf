"""archiver qa in real Chromium: replayed pages name what the archive lacks, and nothing leaves.

The site (qa_site.py) loads an image, a font and JSON only through CSS and scripts.  A plain
crawl misses them; QA replays each page through the web plugin's replay in this process and
names each missing URL with who asked for it.  A page with nothing missing reports nothing.
A `--browser` capture replayed whole scores at the top; with its stylesheet taken out of the
index it scores lower and names the stylesheet.  A stand-in for the live web counts no request.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer
from archiver_plugins.qa.results import read_runs, status_lines
from archiver_plugins.qa.run import Selection, check_archive
from archiver_plugins.replay.app import make_app
from browser import chromium_path
from qa_site import build_site
from terminal import run_on_terminal, screen_lines

from archiver.cli import main
from archiver.testing import CrawlFn, Site

pytestmark = pytest.mark.timeout(90)


async def test_qa_names_what_css_and_scripts_load_and_sends_nothing_live(
    site: Site, other_site: Site, crawl_archive: CrawlFn
) -> None:
    executable = chromium_path()
    assert other_site.server is not None
    live = f"http://127.0.0.1:{other_site.server.port}/away"
    build_site(site, live_port=other_site.server.port)
    moving = "<p>Leaving.</p><script>setTimeout(() => { location.href = 'plain.html'; }, 50);</script>"
    site.page("/moving.html", moving)
    crawl = await crawl_archive([site.url("/"), site.url("/moving.html")], plugins=("links", "warc"))
    archive = crawl.archive
    assert other_site.hits == {}
    run, summary = await check_archive(archive, executable, Selection(), tabs=2)
    pages = {page.url: page for page in summary.worst}
    home = pages[site.url("/")]
    missing = {request.url: request.by for request in home.missing}
    assert missing == {
        site.url("/fonts.css"): "script",
        site.url("/data.json"): "script",
        site.url("/set.png"): "css",
        site.url("/gone.json"): "script",
        site.url("/toggle.png"): "script",
    }
    assert [(request.url, request.by) for request in home.live] == [(live, "script")]
    assert other_site.hits == {}, "a request reached the live stand-in"
    assert site.url("/plain.html") not in pages, "a page with nothing missing was reported"
    assert (summary.checked, summary.complete) == (3, 2)
    assert dict(summary.missing_by_kind) == {"script": 4, "css": 1}
    assert dict(summary.missing_by_host) == {site.host: 5}
    # kept in the archive, one line per page, and told by `archiver status`
    lines = [
        json.loads(line) for line in (archive / "qa" / f"pages-{run:04d}.jsonl").read_text().splitlines()
    ]
    plain = next(line for line in lines if line["url"] == site.url("/plain.html"))
    assert plain["complete"] and [r["url"] for r in plain["requests"]] == [site.url("/a.png")]
    left = next(line for line in _results(archive, run) if line["url"] == site.url("/moving.html"))
    assert left["complete"] and "navigated to" in left["notes"][0], left  # checked, not followed
    assert read_runs(archive)[-1].summary["missing_resources"] == 5
    label, words = next(iter(status_lines(archive) or []))
    assert label == "last QA" and "3 pages checked, 2 complete, 5 resources missing" in words


async def test_qa_command_on_a_terminal_shows_progress_then_the_worst_pages(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    chromium_path()
    build_site(site)
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"))
    code, text = await asyncio.to_thread(run_on_terminal, ["qa", str(crawl.archive)], tmp_path, 60)
    assert code == 1, text
    assert re.search(r"QA\s.*[0-2]/2", text), "no progress bar on the terminal"
    assert "QA run 1 of" in text and "2 pages checked, 1 complete, 5 resources missing" in text
    assert f"missing (css asked): {site.url('/set.png')}" in text
    code, text = await asyncio.to_thread(
        run_on_terminal, ["qa", str(crawl.archive), "--pages", "plain", "--json"], tmp_path, 60
    )
    assert code == 0, text
    result = json.loads(text[text.index("{") :])
    assert (result["run"], result["pages_checked"], result["missing_resources"]) == (2, 1, 0)


async def test_ctrl_c_during_qa_says_how_many_pages_were_checked_in_one_line(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    chromium_path()
    site.loose_web(30)
    crawl = await crawl_archive(site.url("/p0"), plugins=("links", "warc"))
    args = ["qa", str(crawl.archive), "--tabs", "1"]
    code, text = await asyncio.to_thread(run_on_terminal, args, tmp_path, 90, interrupt_when="1/30")
    assert code == 130, text
    lines = screen_lines(text)
    assert any("pages checked, 0 lacking something," in line and line.endswith(" left") for line in lines)
    told = [line for line in lines if line.startswith("Interrupted")]
    assert len(told) == 1 and re.fullmatch(
        r"Interrupted: \d+ of 30 pages checked, 0 lacking something; run the same command again"
        r" to check them all\.",
        told[0],
    ), lines
    assert not any(word in text for word in ("Traceback", "Future exception", "Connection closed")), text


async def test_browser_capture_scores_at_the_top_and_lower_without_its_stylesheet(
    site: Site, tmp_path: Path
) -> None:
    from archiver.manager import make_plugin_manager
    from archiver.runner import run_crawl
    from archiver.testing import make_config

    executable = chromium_path()
    build_site(site)
    browser = {"all": True, "tabs": 2, "idle_timeout": 1.5, "page_timeout": 15.0}
    config = make_config(tmp_path, [site.url("/")], plugins={"browser": browser})
    names = ("links", "warc", "browser")
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in names])
    archive = (await run_crawl(config, pm)).archive
    _, whole = await check_archive(archive, executable, Selection(pattern=re.compile(r"/$")))
    assert (whole.checked, whole.complete, whole.worst) == (1, 1, [])
    page = next(iter(_results(archive, 1)))
    assert page["screenshot_score"] >= 0.99 and page["text_score"] >= 0.99, page
    # the archive loses its stylesheet (its index no longer names it)
    index = next((archive / "warc").glob("*.cdxj"))
    index.write_text("".join(line for line in index.read_text().splitlines(True) if "/style.css" not in line))
    _, broken = await check_archive(archive, executable, Selection(pattern=re.compile(r"/$")))
    [worst] = broken.worst
    assert [(r.url, r.by) for r in worst.missing] == [(site.url("/style.css"), "html")]
    assert worst.screenshot_score is not None and worst.screenshot_score < 0.5
    assert worst.text_score is not None and worst.text_score >= 0.99
    assert worst.replay_screenshot is not None
    # serve shows the QA view: the page, its scores, what it lacks, both screenshots
    server = TestServer(make_app([archive]), host="127.0.0.1")
    await server.start_server()
    try:
        async with ClientSession() as client:
            async with client.get(server.make_url("/qa")) as response:
                view = await response.text()
                assert response.status == 200
            assert site.url("/style.css") in view and "missing (html asked)" in view
            shots = re.findall(r'src="(/qa/shot\?[^"]+)"', view)
            assert len(shots) == 2
            for shot in shots:
                async with client.get(server.make_url(shot.replace("&amp;", "&"))) as response:
                    assert response.status == 200 and (await response.read()).startswith(b"\x89PNG")
    finally:
        await server.close()


def _results(archive: Path, run: int) -> list[dict[str, Any]]:
    lines = (archive / "qa" / f"pages-{run:04d}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_qa_of_an_export_names_what_the_mirror_lacks_that_the_archive_has(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    executable = chromium_path()
    assert other_site.server is not None
    build_site(site, live_port=other_site.server.port)
    archive = (await crawl_archive(site.url("/"), plugins=("links", "warc"))).archive
    mirror = tmp_path / "mirror"
    assert await asyncio.to_thread(main, ["export", str(archive), str(mirror), "-q"]) == 0
    (mirror / site.host.replace(":", "+") / "style.css").unlink()
    run, summary = await check_archive(archive, executable, Selection(), export=mirror)
    assert run == 0 and not (archive / "qa").exists(), "QA of an export wrote into the archive"
    assert (summary.checked, summary.complete) == (2, 1)
    assert summary.held_by_archive == {site.url("/style.css"): "html"}
    [home] = summary.worst
    assert site.url("/style.css") in {r.url for r in home.missing}
    assert site.url("/data.json") in {r.url for r in home.missing}  # not archived at all
    assert [r.url for r in home.live] == [f"http://127.0.0.1:{other_site.server.port}/away"]
    assert other_site.hits == {}, "a request reached the live stand-in"


def _solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


async def test_a_browser_capture_waits_for_its_slow_images_before_its_screenshot(
    site: Site, tmp_path: Path
) -> None:
    """Images that arrive after idle_timeout (a slow host, one request at a time) are in the
    capture's screenshot: QA then finds the replay, which has them all, equal to it."""
    from archiver.manager import make_plugin_manager
    from archiver.runner import run_crawl
    from archiver.testing import make_config

    executable = chromium_path()
    colours = [(200, 30, 30), (30, 160, 30), (30, 30, 200), (220, 180, 0)]
    images = "".join(f'<img src="/i{n}.png" width="300" height="200">' for n in range(len(colours)))
    site.page("/", f"<!doctype html><html><head><title>Shapes</title></head><body>{images}</body></html>")
    for n, colour in enumerate(colours):
        site.page(f"/i{n}.png", _solid_png(300, 200, colour), content_type="image/png", delay=0.8)
    browser = {"all": True, "tabs": 1, "idle_timeout": 1.0, "page_timeout": 20.0, "scroll_rounds": 0}
    config = make_config(tmp_path, [site.url("/")], per_host_concurrency=1, plugins={"browser": browser})
    names = ("links", "warc", "browser")
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in names])
    archive = (await run_crawl(config, pm)).archive
    _, summary = await check_archive(archive, executable, Selection(pattern=re.compile(r"/$")))
    page = next(iter(_results(archive, 1)))
    assert page["screenshot_score"] >= 0.99, page
    assert summary.complete == 1
