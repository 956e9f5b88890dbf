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

from archiver.config import load_config
from archiver.errors import ConfigError
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


# -- 2 and 4. a session from cookies.txt; the logout link ------------------------------------


def members_site(site: Site, seen: Seen) -> None:
    """Pages for the holder of the session cookie only; anyone else is sent to /login."""

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.path == "/login":
            return web.Response(text="<form method=post>log in</form>", content_type="text/html")
        if request.cookies.get("sid") != SID:
            return redirect("/login")
        if request.path == "/logout":
            return web.Response(text="bye", headers={"Set-Cookie": "sid=; Max-Age=0; Path=/"})
        links = {
            "/": ["/members/a", "/members/b", "/logout", "/account?action=sign-out"],
            "/members/a": ["/members/c"],
        }.get(request.path, [])
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        body = f"<html><body><h1>members only: {request.path}</h1>{anchors}</body></html>"
        return web.Response(text=body, content_type="text/html")

    for path in ("/", "/login", "/logout", "/account", "/members/a", "/members/b", "/members/c"):
        site.handler(path, handle)


MEMBER_PAGES = ("/", "/members/a", "/members/b", "/members/c")


async def test_cookies_file_opens_the_members_pages_and_the_logout_links_are_never_followed(
    site: Site, tmp_path: Path
) -> None:
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(
        tmp_path / "cookies.txt",
        f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}",
        "#HttpOnly_.elsewhere.example\tTRUE\t/\tFALSE\t0\tsid\tnot-for-this-host",
    )
    archive = tmp_path / "a"
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(archive), "--cookies", str(jar), *FAST, *PLUGINS
    )
    assert code == 0, err
    assert fetched_ok(archive) == {site.url(path) for path in MEMBER_PAGES}
    assert "/login" not in seen.paths()
    assert all(cookie_of(headers.get("Cookie"), "sid") == SID for _, headers in seen.requests)
    assert "/logout" not in seen.paths() and not any(p.startswith("/account") for p in seen.paths())
    skipped = {r["url"]: r["reason"] for r in log_lines(archive) if r.get("outcome") == "skipped"}
    assert skipped[site.url("/logout")].startswith("logout: looks like a sign-out link")
    assert skipped[site.url("/account?action=sign-out")].startswith("logout:")
    code, out, err = await run_cli("why", str(archive), site.url("/logout"))
    assert "logout" in out and "sign-out link" in out, out + err


async def test_allow_logout_follows_the_sign_out_link(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    crawl = await warc_crawl(tmp_path, site.url("/"), cookies_file=str(jar), allow_logout=True, max_tasks=1)
    assert "/logout" in seen.paths()
    assert crawl.stats["skipped_logout"] == 0


async def test_without_credentials_a_logout_link_is_an_ordinary_link(site: Site, tmp_path: Path) -> None:
    site.page("/", links=["/logout"])
    site.page("/logout", "bye")
    crawl = await warc_crawl(tmp_path, site.url("/"))
    assert site.hits["/logout"] == 1
    assert crawl.stats["skipped_logout"] == 0


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("127.0.0.1 FALSE / FALSE 0 sid x", ":3: expected 7 fields separated by tabs"),
        ("127.0.0.1\tMAYBE\t/\tFALSE\t0\tsid\tx", ":3: the subdomains field must be TRUE or FALSE"),
        ("127.0.0.1\tFALSE\t/\tFALSE\tsoon\tsid\tx", ":3: expires must be a Unix time"),
    ],
)
async def test_a_malformed_cookies_file_is_one_line_naming_the_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    jar = cookies_txt(tmp_path / "cookies.txt", line)
    archive = tmp_path / "a"
    code, _, err = await run_cli("crawl", "http://127.0.0.1:9/", "-o", str(archive), "--cookies", str(jar))
    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert f"{jar}{problem}" in err
    assert not archive.exists()


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--header", "X-Token secret"], "'X-Token secret' is not a header: expected 'Name: value'"),
        (["--header", "Bad Name: x"], "is not a header"),
        (["--header", "Host: elsewhere"], "Host is the URL's own"),
        (["--proxy", "socks5://127.0.0.1:1080"], "expected 'env' or a proxy's http://HOST:PORT URL"),
        (["--auth", "127.0.0.1:9"], "no credentials for 127.0.0.1:9: add `machine 127.0.0.1:9"),
        (["--cookies", "/nonexistent/cookies.txt"], "cookies file not found"),
    ],
)
async def test_bad_header_proxy_or_credentials_are_one_line_errors(
    tmp_path: Path, args: list[str], problem: str
) -> None:
    env = {**ENV, "NETRC": str(tmp_path / "no-netrc"), "HOME": str(tmp_path)}
    env.pop("ARCHIVER_LOGIN", None)
    code, _, err = await run_cli("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "a"), *args, env=env)
    assert code == 2, err
    assert err.strip().count("\n") == 0, err
    assert problem in err


def test_hosts_tables_are_checked_with_the_core_error_format(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[hosts."example.org"]\nauth = "digest"\n')
    with pytest.raises(ConfigError, match=r'\[hosts."example.org"\] auth: expected one of'):
        load_config(config)
    config.write_text('[hosts."example.org"]\nheader = ["X: 1"]\n')
    with pytest.raises(ConfigError, match=r"header: unknown key; did you mean 'headers'\?"):
        load_config(config)
    config.write_text('[hosts."example.org"]\nheaders = ["X 1"]\n')
    with pytest.raises(ConfigError, match="is not a header"):
        load_config(config)
    config.write_text('[hosts."example.org"]\nheaders = ["X-Team: a"]\nauth = "bearer"\n')
    assert load_config(config).hosts == {"example.org": {"headers": ["X-Team: a"], "auth": "bearer"}}
