"""archiver qa --patch: what QA found missing is fetched once, through a crawl of mode patch.

The site (qa_site.py) hides an image, a font, JSON and a 404 behind CSS and scripts.  After a
plain crawl, `qa --patch` fetches each of them once (the font is named by a stylesheet the
patch itself fetched), the page is checked again and is complete; the 404 is archived as such
and no later patch asks for anything.  A patch killed with SIGKILL resumes with the next
`qa --patch`: what it stored is not fetched again, and the archive's own settings come back.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from browser import chromium_path
from qa_site import HIDDEN, PNG, TEXT, build_site

from archiver.history import read_history
from archiver.testing import CrawlFn, Resource, Site

pytestmark = pytest.mark.timeout(120)


async def archiver(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 90)
    return process.returncode or 0, output.decode()


def roots(archive: Path) -> list[str]:
    with (archive / "crawl.toml").open("rb") as file:
        found: list[str] = tomllib.load(file)["crawl"]["roots"]
    return found


async def test_patch_fetches_each_missing_resource_once_and_qa_is_then_clean(
    site: Site, crawl_archive: CrawlFn
) -> None:
    chromium_path()
    build_site(site)
    archive = (await crawl_archive(site.url("/"), plugins=("links", "warc"), frontier="sqlite")).archive
    assert not any(site.hits[path] for path in HIDDEN), "the plain crawl found a hidden resource"
    site.hits.clear()
    code, output = await archiver("status", str(archive), "--json")
    crawled = json.loads(output)
    code, output = await archiver("qa", str(archive), "--patch", "--json")
    assert code == 0, output
    result: dict[str, Any] = json.loads(output[output.index("{") :])
    assert dict(site.hits) == {path: 1 for path in HIDDEN}
    assert result["patch"]["crawl"] == 2 and result["patch"]["resources"] == 5
    assert (result["pages_checked"], result["pages_complete"], result["missing_resources"]) == (1, 1, 0)
    assert result["archived_as_errors"] == 1  # /gone.json, kept as the 404 it was
    assert [run.mode for run in read_history(archive)] == ["crawl", "patch"]
    assert roots(archive) == [site.url("/")], "the archive's own settings were not put back"
    code, output = await archiver("status", str(archive), "--json")
    status = json.loads(output)
    patched = status["done"] + status["failed"]
    assert status["counts_of"] == "patch" and patched >= 5, status
    whole = status["plugins"]["whole archive"]
    assert whole == (
        f"done {crawled['done'] + status['done']}, failed {crawled['failed'] + status['failed']}"
        f" (the last patch: done {status['done']}, failed {status['failed']})"
    ), whole
    code, output = await archiver("status", str(archive))
    assert f"  the last patch (archiver qa --patch): done {status['done']}," in output, output
    log = [json.loads(line) for line in (archive / "crawl-log.jsonl").read_text().splitlines()]
    assert {site.url(path) for path in HIDDEN} <= {line.get("url") for line in log}
    # a second patch has nothing to ask for: the 404 is not tried again
    code, output = await archiver("qa", str(archive), "--patch")
    assert code == 0, output
    assert "Nothing to patch" in output and "0 resources missing" in output
    assert dict(site.hits) == {path: 1 for path in HIDDEN}
    assert [run.mode for run in read_history(archive)] == ["crawl", "patch"]


async def test_a_patch_killed_resumes_and_fetches_nothing_twice(
    site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    chromium_path()
    build_site(site)
    archive = (await crawl_archive(site.url("/"), plugins=("links", "warc"))).archive
    site.hits.clear()
    site.page("/data.json", json.dumps({"text": TEXT}), content_type="application/json", delay=4.0)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "qa",
        str(archive),
        "--patch",
        "-q",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if site.hits["/data.json"] and site.hits["/face.woff2"]:
                break
            await asyncio.sleep(0.05)
        assert site.hits["/data.json"] == 1, "the patch never asked for the slow resource"
        await asyncio.sleep(1.0)  # what was answered reaches the WARC file
    finally:
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
    assert (archive / "qa" / "patch.toml").exists()  # killed: the patch's settings are kept for its resume
    code, output = await archiver("status", str(archive))
    assert "interrupted; run `archiver qa --patch" in output, output
    site.page("/data.json", json.dumps({"text": TEXT}), content_type="application/json")
    code, output = await archiver("qa", str(archive), "--patch")
    assert code == 0, output
    assert "1 page checked, 1 complete, 0 resources missing" in output
    for path in HIDDEN:
        expected = 2 if path == "/data.json" else 1  # in flight when killed: fetched again
        assert site.hits[path] == expected, (path, dict(site.hits))
    runs = read_history(archive)
    assert [(run.mode, run.complete, run.resumes) for run in runs] == [("crawl", True, 0), ("patch", True, 1)]
    assert roots(archive) == [site.url("/")]
    assert not (archive / "qa" / "crawl.toml").exists() and not (archive / "qa" / "patch.toml").exists()


async def test_a_patch_keeps_the_crawls_scope_guard_and_credentials(
    site: Site, other_site: Site, crawl_archive: CrawlFn
) -> None:
    """What QA finds missing is queued as a requisite of the page that lacked it, under the
    archive's own rules (issue 42 point 1): the header meant for the root's host goes to no
    other host, an excluded URL and a private address stay refused, and the requisites of a
    patched stylesheet (its @import) are fetched too."""
    chromium_path()
    seen: list[tuple[str, dict[str, str]]] = []

    async def elsewhere(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, dict(request.headers)))
        return web.Response(body=PNG, content_type="image/png")

    other_site.handler("/b.png", elsewhere)
    other_site.handler("/robots.txt", elsewhere)
    script = (
        "fetch('private/p.json').catch(() => null);"
        " const link = document.createElement('link'); link.rel = 'stylesheet'; link.href = 'late.css';"
        " document.head.appendChild(link);"
    )
    site.serve(
        {
            "/": (
                "<!doctype html><html><head><title>Home</title></head><body><h1>Home</h1>"
                f'<img src="{other_site.url("/b.png")}"><img src="http://10.255.255.1/x.png">'
                '<script src="app.js" defer></script></body></html>'
            ),
            "/app.js": Resource(script, content_type="application/javascript"),
            "/late.css": Resource('@import url("imported.css"); h1 { color: red }', content_type="text/css"),
            "/imported.css": Resource("h1 { color: blue }", content_type="text/css"),
            "/private/p.json": Resource("{}", content_type="application/json"),
        }
    )
    archive = (
        await crawl_archive(
            site.url("/"),
            plugins=("links", "warc"),
            headers=("X-Secret: for-the-root-only",),
            exclude=("/private/", "/b[.]png"),
        )
    ).archive
    assert not seen
    site.hits.clear()
    code, output = await archiver("qa", str(archive), "--patch", "--json")
    assert code == 1, output  # what the crawl refused is still missing
    assert not seen, f"the patch asked a host the crawl refused: {seen}"
    assert site.hits["/private/p.json"] == 0, "the patch fetched a URL the crawl excludes"
    assert site.hits["/late.css"] == 1 and site.hits["/imported.css"] == 1, dict(site.hits)
    log = [json.loads(line) for line in (archive / "crawl-log.jsonl").read_text().splitlines()]
    by_url = {line.get("url"): line for line in log if line.get("url")}
    assert "address guard" in by_url["http://10.255.255.1/x.png"].get("reason", ""), by_url
    assert by_url[site.url("/late.css")]["kind"] == "requisite"
    assert roots(archive) == [site.url("/")]
