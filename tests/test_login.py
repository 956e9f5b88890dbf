"""Sites behind a login: the cookie jar, cookies.txt, headers and credentials per host, proxies.

Every site is a real server on loopback that checks what it was sent the way a real site
would (a cookie wall, a session cookie, HTTP Basic) and remembers every request's
headers, so the tests assert on what each server saw and on what the WARC files hold.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import web
from browser import chromium_path
from warcio.archiveiterator import ArchiveIterator
from yarl import URL

from archiver.cli import main
from archiver.config import load_config
from archiver.credentials import REDACTED
from archiver.errors import ConfigError, FetchError
from archiver.fetcher import GuardedResolver
from archiver.guard import AddressGuard
from archiver.manager import make_plugin_manager
from archiver.model import Crawl
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

pytestmark = pytest.mark.timeout(60)

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "-q"]
AUTOLOAD = {k: v for k, v in os.environ.items() if k != "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD"}
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


def cookie_wall(site: Site, seen: Seen, pages: int = 20, image: str = "") -> None:
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
            links += f'<img src="{image}">' if image else ""
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        return web.Response(text=f"<html><body>{request.path}</body></html>", content_type="text/html")

    for path in ("/", "/welcome", *(f"/p{i}" for i in range(pages))):
        site.handler(path, handle)


async def test_cookie_wall_every_page_archived_and_the_cookie_sent_is_recorded(
    site: Site, other_site: Site, tmp_path: Path
) -> None:
    seen, elsewhere = Seen(), Seen()
    logo_url = other_site.url("/logo.png").replace("127.0.0.1", "localhost")  # another host
    cookie_wall(site, seen, image=logo_url)

    async def logo(request: web.Request) -> web.StreamResponse:
        elsewhere.add(request)
        return web.Response(body=b"PNG", content_type="image/png", headers={"Set-Cookie": "cdn=1"})

    other_site.handler("/logo.png", logo)
    crawl = await warc_crawl(tmp_path, site.url("/"))
    wanted = {site.url("/"), *(site.url(f"/p{i}") for i in range(20))}
    assert fetched_ok(crawl.archive) == {*wanted, logo_url}
    records = request_records(crawl.archive)
    for url in wanted:
        path = url.split(site.host, 1)[1]
        sent = seen.header(path, "Cookie")[-1]
        assert sent == "visited=yes"
        assert records[url][-1]["Cookie"] == sent  # what was sent is what the WARC holds
    assert elsewhere.header("/logo.png", "Cookie") == [None]  # another host: not its cookie
    assert all(cookie_of(h.get("Cookie"), "cdn") is None for _, h in seen.requests)
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
        if request.path == "/login" and request.method == "POST":
            form = await request.post()
            if (form.get("user"), form.get("password")) != (LOGIN, PASSWORD):
                return web.Response(status=403, text="wrong password")
            response = redirect("/")
            response.set_cookie("sid", SID, path="/", httponly=True)
            return response
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
    assert not any("not-for-this-host" in (headers.get("Cookie") or "") for _, headers in seen.requests)
    assert "/logout" not in seen.paths() and not any(p.startswith("/account") for p in seen.paths())
    skipped = {r["url"]: r["reason"] for r in log_lines(archive) if r.get("outcome") == "skipped"}
    assert skipped[site.url("/logout")].startswith("logout: looks like a sign-out link")
    assert skipped[site.url("/account?action=sign-out")].startswith("logout:")
    code, out, err = await run_cli("why", str(archive), site.url("/logout"))
    assert "logout" in out and "sign-out link" in out, out + err


async def test_the_cookies_file_is_summed_up_and_cookies_never_sent_are_named(
    site: Site, tmp_path: Path
) -> None:
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(
        tmp_path / "cookies.txt",
        f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}",
        "127.0.0.1\tFALSE\t/\tFALSE\t1600000000\told\tstale",
        "127.0.0.1\tFALSE\t/\tTRUE\t0\ttoken\tonly-over-https",
    )
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(tmp_path / "a"), "--cookies", str(jar), *FAST[:-1], *PLUGINS
    )
    assert code == 0, err
    lines = err.splitlines()
    assert f"archiver: note: --cookies {jar}: 3 cookies for 127.0.0.1" in lines, lines
    expired = [line for line in lines if "expired" in line]
    assert expired == [
        f"archiver: warning: --cookies {jar}: 1 cookie expired, never sent (old of 127.0.0.1, 2020-09-13):"
        " export the cookies again from a browser that is logged in"
    ]
    secure = [line for line in lines if "Secure" in line]
    assert len(secure) == 1 and "token of 127.0.0.1" in secure[0] and "crawl the https:// URL" in secure[0]
    assert not any("only-over-https" in (headers.get("Cookie") or "") for _, headers in seen.requests)


async def test_a_stale_cookie_sent_to_the_login_page_is_a_warning(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(tmp_path / "cookies.txt", "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tlong-gone")
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(tmp_path / "a"), "--cookies", str(jar), *FAST[:-1], *PLUGINS
    )
    assert code == 0, err
    warned = [line for line in err.splitlines() if "a login page" in line]
    assert warned == [
        f"archiver: warning: {site.url('/')} redirects to {site.url('/login')}, a login page, although the"
        " crawl has cookies or credentials: the login did not work (cookies expired? a wrong password?);"
        " --expect-text TEXT stops it"
    ], err


async def test_a_root_answering_401_to_the_credentials_is_a_warning(
    site: Site, other_site: Site, tmp_path: Path
) -> None:
    seen = Seen()
    private_area(site, seen, other_site.url("").rstrip("/"))
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine {site.host}\n  login {LOGIN}\n  password wrong\n")
    netrc.chmod(0o600)
    args = ["crawl", site.url("/area/"), "-o", str(tmp_path / "a"), "--auth", site.host, *FAST[:-1], *PLUGINS]
    code, _, err = await run_cli(*args, env={**ENV, "NETRC": str(netrc)})
    assert code == 0, err
    assert f"archiver: warning: {site.url('/area/')} answered 401 although the crawl has cookies" in err


async def test_expect_text_stops_a_crawl_that_is_not_logged_in(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    members_site(site, seen)
    stale = cookies_txt(tmp_path / "stale.txt", "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tlong-gone")
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", str(archive), "--expect-text", "members  only", *FAST, *PLUGINS]
    code, _, err = await run_cli(*args, "--cookies", str(stale))
    assert code == 1, err
    assert err.strip() == (
        f"archiver: error: {site.url('/login')} (status 200) does not show 'members only' (--expect-text):"
        " the crawl is not logged in, and stopped; once the login works, crawl again with --recrawl"
    )
    assert not any(path.startswith("/members") for path in seen.paths())
    good = cookies_txt(tmp_path / "good.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    code, _, err = await run_cli(*args, "--cookies", str(good), "--recrawl")
    assert code == 0, err
    assert fetched_ok(archive) >= {site.url(path) for path in MEMBER_PAGES}


def form_login_site(site: Site, seen: Seen) -> None:
    """A login form with a CSRF token tied to a pre-login cookie, as Django's or Rails' are:
    the POST must carry both, and the right login and password, to get the session cookie."""
    token = "csrf-4f2a"

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.path == "/accounts/login/" and request.method == "POST":
            form = await request.post()
            seen.requests[-1][1]["form"] = json.dumps(dict(form))
            if request.cookies.get("csrftoken") != token or form.get("csrfmiddlewaretoken") != token:
                return web.Response(status=403, text="CSRF verification failed")
            if (form.get("username"), form.get("password")) != (LOGIN, PASSWORD):
                return await login_page()
            response = redirect("/")
            response.set_cookie("sid", SID, path="/", httponly=True)
            return response
        if request.path == "/accounts/login/":
            return await login_page()
        if request.cookies.get("sid") != SID:
            return redirect("/accounts/login/")
        links = {"/": ["/members/a", "/members/b"]}.get(request.path, [])
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        return web.Response(text=f"<h1>members only: {request.path}</h1>{anchors}", content_type="text/html")

    async def login_page() -> web.StreamResponse:
        form = (
            '<form method="post" action="/accounts/login/">'
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
            '<input type="text" name="username"><input type="password" name="password">'
            '<input type="checkbox" name="remember" value="yes" checked>'
            '<button type="submit" name="next" value="/">Log in</button></form>'
        )
        response = web.Response(
            text=f"<html><body><form action=/search><input name=q></form>{form}</body></html>"
        )
        response.content_type = "text/html"
        response.set_cookie("csrftoken", token, path="/")
        return response

    for path in ("/", "/accounts/login/", "/members/a", "/members/b"):
        site.handler(path, handle)


async def test_form_login_with_a_csrf_token_then_the_members_pages(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    form_login_site(site, seen)
    netrc = tmp_path / "netrc"
    netrc.write_text(f'machine {site.host}\n  login {LOGIN}\n  password "{PASSWORD}"\n')
    netrc.chmod(0o600)
    archive = tmp_path / "a"
    args = [
        "crawl",
        site.url("/"),
        "-o",
        str(archive),
        "--login-form",
        site.url("/accounts/login/"),
        *FAST[:-1],
    ]
    env = {**ENV, "NETRC": str(netrc)}
    code, _, err = await run_cli(*args, *PLUGINS, "--plugin", "archiver_plugins.login", env=env)
    assert code == 0, err
    assert f"archiver: note: logged in at {site.url('/accounts/login/')} as {LOGIN}: " in err, err
    posted = [headers for path, headers in seen.requests if "form" in headers]
    assert len(posted) == 1
    sent = {"csrfmiddlewaretoken": "csrf-4f2a", "remember": "yes", "next": "/"}
    assert json.loads(posted[0]["form"]) == {**sent, "username": LOGIN, "password": PASSWORD}
    assert fetched_ok(archive) == {site.url(path) for path in ("/", "/members/a", "/members/b")}
    assert all(PASSWORD.encode() not in path.read_bytes() for path in (archive / "warc").iterdir())
    netrc.write_text(f"machine {site.host}\n  login {LOGIN}\n  password wrong\n")
    again = ["--recrawl", "--expect-text", "members only"]
    code, _, err = await run_cli(*args, *again, *PLUGINS, "--plugin", "archiver_plugins.login", env=env)
    assert code == 1 and err.strip().splitlines()[-1] == (
        f"archiver: error: --login-form {site.url('/accounts/login/')}: the site answered the login with a"
        " login form again: wrong login or password?"
    ), err
    assert "Traceback" not in err


async def test_a_login_form_sent_to_another_host_gets_no_password(
    site: Site, other_site: Site, tmp_path: Path
) -> None:
    elsewhere = Seen()
    site.page("/", "<p>home</p>")
    site.page(
        "/login",
        f'<form method="post" action="{other_site.url("/collect")}"><input name="user">'
        '<input type="password" name="pw"></form>',
    )
    site.page("/search-login", '<form action="/s"><input name="u"><input type="password" name="p"></form>')

    async def collect(request: web.Request) -> web.StreamResponse:
        elsewhere.add(request)
        return web.Response(text="thanks")

    other_site.handler("/collect", collect)
    env = {**ENV, "NETRC": str(tmp_path / "none"), "ARCHIVER_LOGIN": LOGIN, "ARCHIVER_PASSWORD": PASSWORD}
    for path, why in (
        ("/login", f"the form is sent to {other_site.url('/collect')}, another host than the login page's"),
        ("/search-login", "the form is sent by GET, which would put the password in its URL"),
    ):
        args = ["crawl", site.url("/"), "-o", str(tmp_path / path.strip("/")), "--login-form", site.url(path)]
        code, _, err = await run_cli(*args, *FAST, *PLUGINS, "--plugin", "archiver_plugins.login", env=env)
        assert code == 1 and why in err, err
    assert elsewhere.requests == [] and "/s" not in site.hits


def curl_path() -> str:
    path = shutil.which("curl")
    if path is None:
        message = "curl is not installed (apt-get install curl)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


async def test_log_in_once_with_curl_then_crawl_with_its_cookies_txt(site: Site, tmp_path: Path) -> None:
    """The README's way: post the login form once with curl -c, crawl with the file it wrote."""
    seen = Seen()
    members_site(site, seen)
    form = tmp_path / "login-form.txt"
    form.write_text(urlencode({"user": LOGIN, "password": PASSWORD}))
    jar = tmp_path / "cookies.txt"
    curl = await asyncio.create_subprocess_exec(
        curl_path(), "-s", "-o", os.devnull, "-c", str(jar), "-d", f"@{form}", site.url("/login")
    )
    assert await asyncio.wait_for(curl.wait(), 30) == 0
    assert "#HttpOnly_127.0.0.1" in jar.read_text()  # curl's own format, prefix and all
    crawl = await warc_crawl(tmp_path, site.url("/"), cookies_file=str(jar))
    assert fetched_ok(crawl.archive) == {site.url(path) for path in MEMBER_PAGES}
    assert seen.paths().count("/login") == 1  # curl's post only
    assert "/logout" not in seen.paths()


async def test_a_session_cookie_given_as_a_header(site: Site, tmp_path: Path) -> None:
    seen = Seen()
    members_site(site, seen)
    crawl = await warc_crawl(tmp_path, site.url("/"), headers=(f"Cookie: sid={SID}",))
    assert fetched_ok(crawl.archive) == {site.url(path) for path in MEMBER_PAGES}
    assert "/login" not in seen.paths() and "/logout" not in seen.paths()


async def test_pages_about_signing_out_are_followed_and_sign_out_links_are_not(
    site: Site, tmp_path: Path
) -> None:
    """A page that only mentions sign-out in its name (a document, a title's slug) is content."""
    about = [
        "/docs/topics/auth/logout-views.html",
        "/blog/why-signout-matters",
        "/help/sign-out-and-session-faq",
    ]
    actions = ["/logout", "/users/sign_out", "/user/logout.php", "/account/doLogout", "/logout-confirm"]
    site.page("/", links=[*about, *actions])
    for path in (*about, *actions):
        site.page(path, "a page")
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    crawl = await warc_crawl(tmp_path, site.url("/"), cookies_file=str(jar))
    assert {path for path in site.hits if path != "/"} == set(about)
    assert crawl.stats["skipped_logout"] == len(actions)


async def test_allow_logout_follows_the_sign_out_link_and_without_credentials_it_is_a_link(
    site: Site, tmp_path: Path
) -> None:
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    crawl = await warc_crawl(tmp_path, site.url("/"), cookies_file=str(jar), allow_logout=True, max_tasks=1)
    assert "/logout" in seen.paths()
    assert crawl.stats["skipped_logout"] == 0
    # without cookies or credentials given there is nothing to lose: an ordinary link
    other = Site()
    await other.start()
    try:
        other.page("/", links=["/logout"])
        other.page("/logout", "bye")
        crawl = await warc_crawl(tmp_path / "plain", other.url("/"))
        assert other.hits["/logout"] == 1 and crawl.stats["skipped_logout"] == 0
    finally:
        await other.close()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("127.0.0.1 FALSE / FALSE 0 sid x", ":3: expected 7 fields separated by tabs"),
        ("127.0.0.1\tMAYBE\t/\tFALSE\t0\tsid\tx", ":3: the subdomains field must be TRUE or FALSE"),
        ("127.0.0.1\tFALSE\t/\tFALSE\tsoon\tsid\tx", ":3: expires must be a Unix time"),
        (".\tTRUE\t/\tFALSE\t0\tsid\tx", ":3: '.' is not a cookie domain: no host name"),
        ("..\tTRUE\t/\tFALSE\t0\tsid\tx", ":3: '..' is not a cookie domain: an empty label"),
        ("a..b\tTRUE\t/\tFALSE\t0\tsid\tx", ":3: 'a..b' is not a cookie domain: an empty label"),
        (".com\tTRUE\t/\tFALSE\t0\tsid\tx", ":3: '.com' is not a cookie domain: a public suffix"),
        ("co.uk\tTRUE\t/\tFALSE\t0\tsid\tx", ":3: 'co.uk' is not a cookie domain: a public suffix"),
        ("127.0.0.1\tFALSE\t/\tFALSE\tinf\tsid\tx", ":3: expires must be a Unix time, got 'inf'"),
        ("127.0.0.1\tFALSE\t/\tFALSE\tnan\tsid\tx", ":3: expires must be a Unix time, got 'nan'"),
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


# -- 3. credentials per host, never across a redirect -----------------------------------------

LOGIN, PASSWORD = "reader", "pa ss:wörd"


def basic(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()


def private_area(site: Site, seen: Seen, elsewhere: str) -> None:
    """/area/ asks for HTTP Basic; a page and an image of it redirect to another host."""

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.headers.get("Authorization") != basic(LOGIN, PASSWORD):
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="area"'})
        if request.path == "/area/away":
            return redirect(f"{elsewhere}/landing")
        if request.path == "/area/logo.png":
            return redirect(f"{elsewhere}/logo.png")
        body = (
            '<html><body><a href="/area/page">page</a> <a href="/area/away">away</a>'
            '<img src="/area/logo.png"> <a href="/logout">log out</a></body></html>'
        )
        return web.Response(text=body, content_type="text/html")

    for path in ("/area/", "/area/page", "/area/away", "/area/logo.png"):
        site.handler(path, handle)


def foreign_host(other: Site, seen: Seen) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.path == "/logo.png":
            return web.Response(body=b"\x89PNG", content_type="image/png")
        return web.Response(text="<html><body>landing</body></html>", content_type="text/html")

    for path in ("/landing", "/logo.png"):
        other.handler(path, handle)


@pytest.mark.parametrize("source", ["netrc", "environment"])
async def test_basic_auth_goes_to_its_host_only_never_across_a_redirect(
    site: Site, other_site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    seen, elsewhere = Seen(), Seen()
    private_area(site, seen, other_site.url("").rstrip("/"))
    foreign_host(other_site, elsewhere)
    netrc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    if source == "netrc":
        netrc.write_text(f'machine {site.host}\n  login {LOGIN}\n  password "{PASSWORD}"\n')
        netrc.chmod(0o600)
    else:
        monkeypatch.setenv("ARCHIVER_LOGIN", LOGIN)
        monkeypatch.setenv("ARCHIVER_PASSWORD", PASSWORD)
    roots = [site.url("/area/"), site.url("/area/away")]  # a root's redirect to another host is followed
    config = make_config(tmp_path, roots, auth=(site.host,))
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links", "archiver_plugins.warc"])
    crawl = await run_crawl(config, pm)
    assert fetched_ok(crawl.archive) >= {site.url("/area/"), site.url("/area/page")}
    assert all(h.get("Authorization") == basic(LOGIN, PASSWORD) for _, h in seen.requests)
    assert sorted(elsewhere.paths()) == ["/landing", "/logo.png"]  # both redirects were followed
    assert all("Authorization" not in headers for _, headers in elsewhere.requests)
    assert "/logout" not in seen.paths()  # credentials given: the sign-out link is refused
    records = request_records(crawl.archive)
    assert records[site.url("/area/page")][0]["Authorization"] == basic(LOGIN, PASSWORD)
    assert "Authorization" not in records[other_site.url("/landing")][0]


async def test_headers_and_a_bearer_token_per_host_from_the_hosts_table(
    site: Site, other_site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.page("/", f'<a href="{other_site.url("/api")}">api</a><img src="{other_site.url("/i.png")}">')
    other_site.page("/i.png", b"PNG", content_type="image/png")
    other_site.page("/api", "ok")
    monkeypatch.setenv("API_TOKEN", "t0ken")
    hosts = {other_site.host: {"auth": "bearer", "token_env": "API_TOKEN", "headers": ["X-Team: archive"]}}
    seen: dict[str, dict[str, str]] = {}

    def recorder(server: Site) -> None:
        for path, handler in list(server.handlers.items()):

            async def wrapped(request: web.Request, handler: Any = handler) -> web.StreamResponse:
                seen[f"{request.host}{request.path}"] = dict(request.headers)
                return await handler(request)

            server.handlers[path] = wrapped

    recorder(site)
    recorder(other_site)
    await warc_crawl(tmp_path, site.url("/"), headers=("X-Archive: yes",), hosts=hosts)
    root, image = seen[f"{site.host}/"], seen[f"{other_site.host}/i.png"]
    assert root.get("X-Archive") == "yes" and "Authorization" not in root and "X-Team" not in root
    assert image.get("Authorization") == "Bearer t0ken" and image.get("X-Team") == "archive"
    assert "X-Archive" not in image  # --header goes to the roots' hosts only


# -- 5. secrets in the archive ------------------------------------------------------------------


async def test_redact_credentials_keeps_the_values_out_of_the_warc_and_wacz_warns_otherwise(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Seen()
    members_site(site, seen)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("ARCHIVER_LOGIN", LOGIN)
    monkeypatch.setenv("ARCHIVER_PASSWORD", PASSWORD)
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    secret_header = "X-Api-Key: key-4711"
    exports = {}
    for redact in (True, False):
        archive = tmp_path / f"redacted-{redact}"
        args = ["crawl", site.url("/"), "-o", str(archive), "--cookies", str(jar), "--header", secret_header]
        args += ["--auth", site.host, *(["--redact-credentials"] if redact else []), *FAST, *PLUGINS]
        code, _, err = await run_cli(*args, env={**ENV, **os.environ})
        assert code == 0, err
        assert fetched_ok(archive) == {site.url(path) for path in MEMBER_PAGES}
        records = request_records(archive)
        headers = records[site.url("/members/a")][0]
        if redact:
            assert headers["Cookie"] == headers["Authorization"] == headers["X-Api-Key"] == REDACTED
            for path in sorted((archive / "warc").glob("*.warc.gz")):
                raw = gzip.decompress(path.read_bytes())
                assert SID.encode() not in raw and b"key-4711" not in raw
                assert base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()) not in raw
        else:
            assert cookie_of(headers["Cookie"], "sid") == SID
            assert headers["X-Api-Key"] == "key-4711"
        wacz = tmp_path / f"{redact}.wacz"
        args = ["export", str(archive), str(wacz), "--format", "wacz", "-q"]
        code, _, exports[redact] = await run_cli(*args, env=AUTOLOAD)
        assert code == 0, exports[redact]
    assert all(headers.get("X-Api-Key") == "key-4711" for _, headers in seen.requests)  # sent as given
    assert "warning" not in exports[True]
    warnings = [line for line in exports[False].splitlines() if "warning" in line]
    assert (
        len(warnings) == 1
        and "--redact-credentials" in warnings[0]
        and "cookies from --cookies" in warnings[0]
    )


# -- 1. kill -9, then resume: the same login ------------------------------------------------------


async def test_kill_then_resume_goes_on_with_the_same_session(site: Site, tmp_path: Path) -> None:
    issued: list[str] = []
    sent: list[tuple[str, str | None]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/welcome":
            issued.append(f"visitor-{len(issued)}")
            response = redirect(request.query.get("next", "/"))
            response.set_cookie("visitor", issued[-1], path="/")
            return response
        sent.append((request.path, request.cookies.get("visitor")))
        if request.cookies.get("login") != "ok":
            return web.Response(status=403, text="log in first")
        if request.cookies.get("visitor") not in issued:
            return redirect(f"/welcome?next={request.path}")
        await asyncio.sleep(0.03)
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(60)) if request.path == "/" else ""
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    for path in ("/", "/welcome", *(f"/p{i}" for i in range(60))):
        site.handler(path, handle)
    archive = tmp_path / "a"
    jar = cookies_txt(tmp_path / "cookies.txt", "127.0.0.1\tFALSE\t/\tFALSE\t0\tlogin\tok")
    args = [
        "crawl",
        site.url("/"),
        "-o",
        str(archive),
        "--frontier",
        "sqlite",
        "--max-tasks",
        "1",
        "--cookies",
        str(jar),
        *FAST,
        *PLUGINS,
    ]
    proc = await start_cli(*args)
    for _ in range(400):
        await asyncio.sleep(0.025)
        saved = archive / "cookies.json"
        # the jar is saved within half a second of a cookie: wait for the session's to be kept
        if len(sent) > 15 and saved.exists() and "visitor-0" in saved.read_text(errors="replace"):
            break
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert len(sent) < 60, "the crawl ended before it was killed"
    jar.unlink()  # the saved jar is enough to go on
    code, _, err = await run_cli("crawl", "--resume", str(archive), "-q")
    assert code == 0, err
    assert issued == ["visitor-0"]  # one visit, one session, across the kill
    assert {path for path, _ in sent} == {"/", *(f"/p{i}" for i in range(60))}
    assert {cookie for _, cookie in sent[1:]} == {"visitor-0"}
    assert all(status == 200 for status in statuses(archive).values() if status != 302)


# -- 7. proxies -------------------------------------------------------------------------------------


class CountingProxy:
    """A forward HTTP proxy on loopback that remembers every request line and header it passes on."""

    def __init__(self) -> None:
        self.passed: list[tuple[str, dict[str, str]]] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ")
            headers = dict(line.split(": ", 1) for line in head[1:] if line)
            self.passed.append((target, headers))
            url = URL(target)
            upstream_reader, upstream_writer = await asyncio.open_connection(url.host, url.port)
            kept = [
                f"{k}: {v}" for k, v in headers.items() if not k.lower().startswith(("proxy-", "connection"))
            ]
            request = "\r\n".join(
                [f"{method} {url.raw_path_qs} HTTP/1.1", *kept, "Connection: close", "", ""]
            )
            upstream_writer.write(request.encode("latin-1"))
            writer.write(await upstream_reader.read())
            upstream_writer.close()
            await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def proxy() -> Any:
    server = CountingProxy()
    await server.start()
    yield server
    await server.close()


async def test_proxy_carries_every_request_and_the_warc_records_the_target(
    site: Site, proxy: CountingProxy, tmp_path: Path
) -> None:
    site.page("/", links=["/a", "/b"])
    site.page("/a", "a")
    site.page("/b", "b")
    proxy_url = proxy.url.replace("http://", "http://agent:hunter2@")
    crawl = await warc_crawl(tmp_path, site.url("/"), proxy=proxy_url)
    assert sorted(target for target, _ in proxy.passed) == [site.url(p) for p in ("/", "/a", "/b")]
    assert all(h.get("Proxy-Authorization") == basic("agent", "hunter2") for _, h in proxy.passed)
    assert site.hits.total() == 3
    for path in sorted((crawl.archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("request", "response"):
                    assert record.rec_headers.get_header("WARC-Target-URI").startswith(site.url("/"))
                    assert record.rec_headers.get_header("WARC-IP-Address") is None
                if record.rec_type == "request":
                    assert record.http_headers.get_header("Host") == site.host
                    assert record.http_headers.get_header("Proxy-Authorization") is None


async def test_proxy_env_only_when_asked_and_no_proxy_is_honoured(
    site: Site, other_site: Site, proxy: CountingProxy, tmp_path: Path
) -> None:
    other = other_site.url("/elsewhere").replace("127.0.0.1", "localhost")
    site.page("/", f'<a href="/a">a</a><img src="{other}">')
    site.page("/a", "a")
    other_site.page("/elsewhere", b"PNG", content_type="image/png")
    env = {
        **ENV,
        "HTTP_PROXY": proxy.url,
        "http_proxy": proxy.url,
        "NO_PROXY": "localhost",
        "no_proxy": "localhost",
    }
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(tmp_path / "direct"), *FAST, *PLUGINS, env=env
    )
    assert code == 0, err
    assert proxy.passed == [] and site.hits.total() == 2  # the variables alone change nothing
    args = ["crawl", site.url("/"), "-o", str(tmp_path / "env"), "--proxy", "env", *FAST, *PLUGINS]
    code, _, err = await run_cli(*args, env=env)
    assert code == 0, err
    assert sorted(target for target, _ in proxy.passed) == [site.url("/"), site.url("/a")]
    assert other_site.hits["/elsewhere"] == 2  # NO_PROXY: straight to it, both times


async def test_through_a_proxy_the_address_guard_still_judges_the_target() -> None:
    guard = AddressGuard(["http://93.184.216.34/"])  # a crawl of a public site
    resolver = GuardedResolver(guard, frozenset({"localhost"}))
    with pytest.raises(FetchError, match=r"address guard: localhost resolves to 127\.0\.0\.1 is a loopback"):
        await resolver.check_target("http://localhost:8080/admin")
    assert await resolver.resolve("localhost", 3128)  # the proxy itself is reached
    await resolver.check_target("http://93.184.216.35/")  # public: fine
    await resolver.close()


# -- 6. --browser shares the login ------------------------------------------------------------------

APP = """<!doctype html><html><body><div id="out">loading</div><script>
document.cookie = "js_ready=1; path=/";
const pref = (document.cookie.match(/pref=([a-z]+)/) || [null, "none"])[1];
fetch("/api/secret").then(r => r.json()).then(d => {
  document.getElementById("out").innerHTML =
    '<a href="' + d.link + '">Rendered: ' + d.text + '</a> <a href="/theme-' + pref + '">theme</a>';
});
</script></body></html>"""


async def test_browser_pages_share_the_crawls_login_both_ways(site: Site, tmp_path: Path) -> None:
    chromium_path()
    seen = Seen()

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.cookies.get("sid") != SID:
            return web.Response(status=403, text="members only")
        if request.path == "/api/secret":
            if request.cookies.get("js_ready") != "1":
                return web.Response(status=403, text="run the page's script first")
            return web.json_response({"link": "/members/scripted", "text": "TOP SECRET"})
        if request.path == "/":
            return web.Response(text=APP, content_type="text/html")
        return web.Response(text=f"<html><body>{request.path}</body></html>", content_type="text/html")

    for path in ("/", "/api/secret", "/members/scripted", "/theme-dark", "/theme-none"):
        site.handler(path, handle)
    jar = cookies_txt(
        tmp_path / "cookies.txt",
        f"#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}",
        f"127.0.0.1\tFALSE\t/\tFALSE\t{int(time.time()) + 3600}\tpref\tdark",
    )
    browser = {"all": True, "tabs": 1, "idle_timeout": 1.5, "page_timeout": 15.0, "screenshot": False}
    config = make_config(tmp_path, [site.url("/")], cookies_file=str(jar), plugins={"browser": browser})
    names = ("links", "warc", "browser")
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in names])
    crawl = await run_crawl(config, pm)
    assert crawl.stats["browser.pages"] >= 1
    assert {site.url("/members/scripted"), site.url("/theme-dark")} <= fetched_ok(crawl.archive)
    api = [headers.get("Cookie") or "" for path, headers in seen.requests if path == "/api/secret"]
    assert api and cookie_of(api[0], "js_ready") == "1" and cookie_of(api[0], "sid") == SID
    assert all(status != 403 for status in statuses(crawl.archive).values())
    rendered = b"".join(payloads(crawl.archive))
    assert b"Rendered: TOP SECRET" in rendered
    assert "js_ready" in (crawl.archive / "cookies.json").read_text()


def statuses(archive: Path) -> dict[str, int]:
    return {r["url"]: r["status"] for r in log_lines(archive) if r.get("outcome") == "fetched"}


def payloads(archive: Path) -> Iterator[bytes]:
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                yield record.content_stream().read()


async def test_dry_run_reads_robots_txt_with_the_hosts_credentials(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def robots(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != basic(LOGIN, PASSWORD):
            return web.Response(status=401)
        return web.Response(text="User-agent: *\nDisallow: /area/\n", content_type="text/plain")

    site.handler("/robots.txt", robots)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.setenv("ARCHIVER_LOGIN", LOGIN)
    monkeypatch.setenv("ARCHIVER_PASSWORD", PASSWORD)
    args = ["crawl", site.url("/area/"), "-o", str(tmp_path / "a"), "--auth", site.host, "--dry-run"]
    assert await asyncio.to_thread(main, args) == 0
    assert "robots.txt Disallow: /area/ (User-agent: *)" in capsys.readouterr().out


async def test_redact_credentials_also_redacts_the_session_a_site_hands_out(
    site: Site, tmp_path: Path
) -> None:
    """Issue 42 point 7: the `Set-Cookie` of a response is a secret too; the jar still sends it."""
    seen = Seen()

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.add(request)
        if request.path == "/":
            response = web.Response(text='<a href="/next">next</a>', content_type="text/html")
            response.headers.add("Set-Cookie", "session=handed-out-4242; Path=/; HttpOnly")
            return response
        return web.Response(text="next", content_type="text/html")

    site.handler("/", handle)
    site.handler("/next", handle)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", str(archive), "--redact-credentials", "--header", "X-K: v"]
    code, _, err = await run_cli(*args, *FAST, *PLUGINS)
    assert code == 0, err
    assert cookie_of(dict(seen.requests)["/next"].get("Cookie"), "session") == "handed-out-4242"
    raw = b"".join(gzip.decompress(path.read_bytes()) for path in (archive / "warc").glob("*.warc.gz"))
    assert b"handed-out-4242" not in raw
    assert f"Set-Cookie: session={REDACTED}; Path=/; HttpOnly".encode() in raw


async def test_an_archive_of_a_crawl_with_secrets_is_its_owners_only(site: Site, tmp_path: Path) -> None:
    """Issue 42 point 11: crawl.toml keeps the --header lines, the WARC files the requests:
    the archive folder is 0700 and crawl.toml 0600; an archive without secrets keeps the umask."""
    site.page("/", "home")
    old = os.umask(0o022)
    try:
        for given, archive in ((True, tmp_path / "secret"), (False, tmp_path / "plain")):
            extra = ["--header", "X-Api-Key: key-4711"] if given else []
            code, _, err = await run_cli("crawl", site.url("/"), "-o", str(archive), *extra, *FAST, *PLUGINS)
            assert code == 0, err
            assert (archive / "crawl.toml").stat().st_mode & 0o777 == 0o600
            assert archive.stat().st_mode & 0o777 == (0o700 if given else 0o755)
            if given:
                assert "key-4711" in (archive / "crawl.toml").read_text()  # resume sends it again
    finally:
        os.umask(old)


SIGN_OUT_SPELLINGS = ("/%6Cogout", "/%2Flogout", "/x/..%2Flogout", "/Log%20out", "/account?do=log+out")
DESTRUCTIVE = ("/delete?id=1", "/session/destroy", "/tokens/revoke-all", "/posts/7/Delete")


async def test_the_sign_out_rule_judges_the_decoded_path_and_skips_destructive_links(
    site: Site, tmp_path: Path
) -> None:
    """Issue 42 point 6: every one of these ends the session on the server; none is requested,
    every page is archived logged in, and `why` names the rule."""
    sessions = {SID}
    requested: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        requested.append(request.raw_path)
        if request.cookies.get("sid") not in sessions:
            return web.Response(text="please log in", content_type="text/html")
        if request.raw_path in (*SIGN_OUT_SPELLINGS, *DESTRUCTIVE) or "revoke" in request.path:
            sessions.clear()
            return web.Response(text="done", content_type="text/html")
        links = [*SIGN_OUT_SPELLINGS, *DESTRUCTIVE] if request.path == "/" else []
        links += [f"/members/{n}" for n in range(3)] if request.path == "/" else []
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        return web.Response(text=f"<p>members only</p>{anchors}", content_type="text/html")

    site.handler("/", handle)
    for path in ("/account", "/delete", "/session/destroy", "/tokens/revoke-all", "/posts/7/Delete"):
        site.handler(path, handle)
    for n in range(3):
        site.handler(f"/members/{n}", handle)
    for path in ("/logout", "/Log out", "//logout", "/x/../logout"):
        site.handler(path, handle)
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}")
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", str(archive), "--cookies", str(jar), "--max-tasks", "1"]
    code, _, err = await run_cli(*args, *FAST, *PLUGINS)
    assert code == 0, err
    assert sorted(requested) == sorted(["/", "/members/0", "/members/1", "/members/2"]), requested
    assert sessions == {SID}
    skipped = {r["url"]: r["reason"] for r in log_lines(archive) if r.get("outcome") == "skipped"}
    for path in DESTRUCTIVE:
        assert "changes the account" in skipped[site.url(path)], skipped
    code, out, err = await run_cli("why", str(archive), site.url("/delete?id=1"))
    assert "changes the account ('delete')" in out, out + err


async def test_a_cookie_that_never_expires_is_sent(site: Site, tmp_path: Path) -> None:
    """Issue 42 point 12: an expiry of 1e20 (a browser's "never") was a traceback after the
    archive folder was made; it is kept as the end of the year 9999."""
    seen = Seen()
    members_site(site, seen)
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t1e20\tsid\t{SID}")
    archive = tmp_path / "a"
    code, _, err = await run_cli(
        "crawl", site.url("/"), "-o", str(archive), "--cookies", str(jar), *FAST, *PLUGINS
    )
    assert code == 0, err
    assert fetched_ok(archive) == {site.url(path) for path in MEMBER_PAGES}


async def test_a_whole_browsers_cookies_txt_keeps_the_login(site: Site, tmp_path: Path) -> None:
    """Issue 42 point 5: 4,000 cookies of other sites after the login cookie; the jar (3,300 at
    most) forgot the oldest, the login, and the site was archived logged out, exit 0."""
    seen = Seen()
    members_site(site, seen)
    others = (f".site{n}.example.org\tTRUE\t/\tFALSE\t0\tc\t{n}" for n in range(4000))
    jar = cookies_txt(tmp_path / "cookies.txt", f"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{SID}", *others)
    archive = tmp_path / "a"
    args = ["crawl", site.url("/"), "-o", str(archive), "--cookies", str(jar), *FAST[:-1], *PLUGINS]
    code, _, err = await run_cli(*args)
    assert code == 0, err
    assert fetched_ok(archive) == {site.url(path) for path in MEMBER_PAGES}
    assert "/login" not in seen.paths()
    assert "4000 of its 4001 cookies are for other sites than the roots' (127.0.0.1): not loaded" in err
    crowded = cookies_txt(
        tmp_path / "crowded.txt", *(f"127.0.0.1\tFALSE\t/\tFALSE\t0\tc{n}\tv" for n in range(200))
    )
    args = ["crawl", site.url("/"), "-o", str(tmp_path / "b"), "--cookies", str(crowded), *FAST, *PLUGINS]
    code, _, err = await run_cli(*args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "200 cookies for the crawl's sites (200 for 127.0.0.1); the jar keeps at most 3300" in err
