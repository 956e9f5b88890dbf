"""Sites behind a login: the cookie jar, cookies.txt, headers and credentials per host, proxies.

Every site is a real server on loopback that checks what it was sent the way a real site
would (a cookie wall, a session cookie, HTTP Basic) and remembers every request's
headers, so the tests assert on what each server saw and on what the WARC files hold.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from archiver.manager import make_plugin_manager
from archiver.model import Crawl
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

pytestmark = pytest.mark.timeout(60)

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "-q"]
SID = "s3cr3t-session"


class Seen:
    """The headers of every request a server got, by path."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []

    def add(self, request: web.Request) -> None:
        self.requests.append((request.path_qs, dict(request.headers)))

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def header(self, path: str, name: str) -> list[str | None]:
        return [headers.get(name) for p, headers in self.requests if p == path]


def log_lines(archive: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (archive / "crawl-log.jsonl").read_text().splitlines()]


def fetched_ok(archive: Path) -> set[str]:
    return {r["url"] for r in log_lines(archive) if r.get("outcome") == "fetched" and r.get("status") == 200}


def request_records(archive: Path) -> dict[str, list[dict[str, str]]]:
    """The headers of every WARC request record, by target URI, as warcio reads them."""
    found: dict[str, list[dict[str, str]]] = collections.defaultdict(list)
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "request":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    found[uri].append(dict(record.http_headers.headers))
    return found


def cookie_of(header: str | None, name: str) -> str | None:
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def warc_crawl(tmp_path: Path, root: str, **settings: Any) -> Crawl:
    config = make_config(tmp_path, [root], **settings)
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links", "archiver_plugins.warc"])
    return await run_crawl(config, pm)


async def start_cli(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        env=env or ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await start_cli(*args, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def redirect(location: str) -> web.Response:
    return web.Response(status=302, headers={"Location": location})


def cookies_txt(path: Path, *lines: str) -> Path:
    path.write_text("# Netscape HTTP Cookie File\n\n" + "".join(line + "\n" for line in lines))
    return path


# -- 1. the jar --------------------------------------------------------------------------------


def cookie_wall(site: Site, seen: Seen, pages: int = 20) -> None:
    """A site that sends a visitor without its cookie to /welcome, which sets it and sends them back."""

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.path == "/welcome":
            response = redirect(request.query.get("next", "/"))
            response.set_cookie("visited", "yes", path="/")
            return response
        if request.cookies.get("visited") != "yes":
            return redirect(f"/welcome?next={request.path}")
        if request.path == "/":
            links = "".join(f'<a href="/p{i}">page {i}</a>' for i in range(pages))
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        return web.Response(text=f"<html><body>{request.path}</body></html>", content_type="text/html")

    for path in ("/", "/welcome", *(f"/p{i}" for i in range(pages))):
        site.handler(path, handle)


async def test_cookie_wall_every_page_archived_and_the_cookie_sent_is_recorded(
    site: Site, tmp_path: Path
) -> None:
    seen = Seen()
    cookie_wall(site, seen)
    crawl = await warc_crawl(tmp_path, site.url("/"))
    wanted = {site.url("/"), *(site.url(f"/p{i}") for i in range(20))}
    assert fetched_ok(crawl.archive) == wanted
    records = request_records(crawl.archive)
    for url in wanted:
        path = url.split(site.host, 1)[1]
        sent = seen.header(path, "Cookie")[-1]
        assert sent == "visited=yes"
        assert records[url][-1]["Cookie"] == sent  # what was sent is what the WARC holds
    saved = json.loads((crawl.archive / "cookies.json").read_text())
    assert "visited" in json.dumps(saved)
    assert (crawl.archive / "cookies.json").stat().st_mode & 0o077 == 0


async def test_no_cookies_keeps_no_jar(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    cookie_wall(site, seen)
    crawl = await warc_crawl(tmp_path, site.url("/"), cookies=False)
    assert fetched_ok(crawl.archive) == set()
    assert all(headers.get("Cookie") is None for _, headers in seen.requests)
    assert not (crawl.archive / "cookies.json").exists()
