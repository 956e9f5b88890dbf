"""The browser capture in real Chromium: a page built by scripts is archived whole and replays.

The site's text comes from fetch() of a JSON file, its links are added by a script (one
only through history.pushState), its images load when scrolled to, and one page never
stops loading.  With the browser on, every piece reaches the WARC through the crawl's own
fetcher; `archiver serve` then replays the page in Chromium with every request off the
archive server aborted and counted.  Without it, the crawl is the plain one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from archiver_plugins.index.search import search
from archiver_plugins.replay.app import make_app
from browser import chromium_path, launch_browser
from script_site import TEXT, build_site
from warcio.archiveiterator import ArchiveIterator

from archiver import ConfigError
from archiver.cli import main
from archiver.config import Config
from archiver.layout import CRAWL_LOG_NAME
from archiver.manager import Hooks, make_plugin_manager
from archiver.model import Crawl
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

pytestmark = pytest.mark.timeout(90)

BROWSER_SETTINGS = {"all": True, "tabs": 2, "idle_timeout": 1.5, "page_timeout": 15.0}


async def crawl_site(tmp_path: Path, root: str, browser: dict[str, Any] | None, **overrides: Any) -> Crawl:
    """A crawl with the bundled links, warc, index and browser plugins and `[plugins.browser]` = `browser`."""
    config = make_config(tmp_path, [root], timeout=3.0, plugins={"browser": browser or {}}, **overrides)
    names = ("links", "warc", "index", "browser")
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in names])
    return await run_crawl(config, pm)


def records(archive: Path) -> list[tuple[str, str, str, bytes]]:
    """(type, target URI, content type, payload) of every record in the archive."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.http_headers is not None and record.rec_type == "response":
                    content_type = record.http_headers.get_header("Content-Type") or ""
                else:
                    content_type = record.rec_headers.get_header("Content-Type") or ""
                found.append((record.rec_type, uri, content_type, record.content_stream().read()))
    return found


def log_lines(archive: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (archive / CRAWL_LOG_NAME).read_text().splitlines()]


async def test_browser_archives_what_scripts_build_and_it_replays(site: Site, tmp_path: Path) -> None:
    chromium_path()
    build_site(site)
    crawl = await crawl_site(tmp_path, site.url("/"), BROWSER_SETTINGS)
    stored = records(crawl.archive)
    responses = {uri: body for kind, uri, _, body in stored if kind == "response"}
    for path in ("/", "/data.json", "/added.html", "/pushed.html", "/img/lazy.png", "/tick.json"):
        assert site.url(path) in responses, f"{path} was not archived"
    assert json.loads(responses[site.url("/data.json")]) == {"text": TEXT}
    for path in (
        "/data.json",
        "/img/old-lazy.png",
        "/img/lazy.png",
        "/tick.json",
        "/added.html",
        "/pushed.html",
    ):
        assert site.hits[path] == 1, f"{path} fetched {site.hits[path]} times"

    resources = {uri: (content_type, body) for kind, uri, content_type, body in stored if kind == "resource"}
    dom_type, dom = resources[f"urn:dom:{site.url('/')}"]
    assert dom_type.startswith("text/html") and TEXT in dom.decode()
    assert 'src="img/old-lazy.png"' in dom.decode(), "the lazy image was not loaded by scrolling"
    shot_type, shot = resources[f"urn:screenshot:{site.url('/')}"]
    assert shot_type == "image/png" and shot.startswith(b"\x89PNG\r\n\x1a\n")
    assert f"urn:dom:{site.url('/forever.html')}" in resources

    lines = log_lines(crawl.archive)
    rendered = {line["url"]: line for line in lines if line.get("outcome") in ("rendered", "render_failed")}
    assert rendered[site.url("/")]["outcome"] == "rendered"
    forever = rendered[site.url("/forever.html")]
    assert "network never went quiet" in forever["reason"]
    assert crawl.stats["browser.pages"] >= 4 and crawl.stats["browser.cached"] >= 1
    assert [hit.url for hit in search(crawl.archive, "hydrangeas").hits] == [site.url("/")]

    hits_after_crawl = dict(site.hits)
    server = TestServer(make_app([crawl.archive]), host="127.0.0.1")
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    leaving: list[str] = []
    try:
        async with launch_browser() as browser:
            context: Any = await browser.new_context()  # type: ignore[attr-defined]

            async def only_the_archive(route: Any) -> None:
                if route.request.url.startswith(base + "/"):
                    await route.continue_()
                else:
                    leaving.append(route.request.url)
                    await route.abort()

            await context.route("**/*", only_the_archive)
            page = await context.new_page()
            await page.goto(f"{base}/replay/2/{site.url('/')}")
            await page.wait_for_function(
                f"document.getElementById('text').textContent === {json.dumps(TEXT)}", timeout=10_000
            )
            assert await page.inner_text("#nav a") == "added by a script"
            await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            await page.wait_for_function(
                "(img => img.complete && img.naturalWidth === 40)(document.getElementById('lazy'))",
                timeout=10_000,
            )
    finally:
        await server.close()
    assert leaving == [], f"requests left the archive server: {leaving}"
    assert dict(site.hits) == hits_after_crawl, "the live site was contacted during replay"


async def test_without_browser_the_crawl_is_the_plain_one(site: Site, tmp_path: Path) -> None:
    build_site(site)
    crawl = await crawl_site(tmp_path, site.url("/"), None)
    uris = {uri for _, uri, _, _ in records(crawl.archive)}
    assert site.url("/") in uris and site.url("/forever.html") in uris
    assert not any(uri.startswith("urn:") for uri in uris)
    for path in ("/data.json", "/added.html", "/pushed.html", "/img/lazy.png", "/tick.json"):
        assert site.hits[path] == 0, f"{path} was fetched without the browser"
    assert crawl.stats["browser.pages"] == 0
    assert search(crawl.archive, "hydrangeas").hits == []


async def test_crawl_command_takes_browser_options(site: Site, tmp_path: Path) -> None:
    chromium_path()
    site.page("/", '<div id="t"></div><script>fetch("data.json").then((r) => r.text())</script>')
    site.page("/data.json", "{}", content_type="application/json")
    archive = tmp_path / "cli"
    args = ["crawl", site.url("/"), "-o", str(archive), "--delay", "0", "--ignore-robots", "-q"]
    code = await asyncio.to_thread(main, [*args, "--browser", "--browser-tabs", "1"])
    assert code == 0
    assert site.hits["/data.json"] == 1
    assert any(uri == f"urn:dom:{site.url('/')}" for _, uri, _, _ in records(archive))
    code = await asyncio.to_thread(main, [*args[:3], str(tmp_path / "bad"), "--browser-tabs", "0"])
    assert code == 2


async def test_browser_refuses_pop_ups_downloads_and_endless_scripts(site: Site, tmp_path: Path) -> None:
    chromium_path()
    site.page(
        "/",
        '<!doctype html><title>Hostile</title><a href="loop.html">loop</a> <a href="after.html">after</a>'
        '<script>window.open("popup.html"); const a = document.createElement("a");'
        'a.href = "file.bin"; a.download = "file.bin"; document.body.appendChild(a); a.click();'
        'fetch("post", {method: "POST", body: "x"});</script>',
    )
    site.page(
        "/loop.html",
        '<!doctype html><title>Loop</title><a href="away.html">away</a><script>for (;;) {}</script>',
    )
    site.page(
        "/away.html", '<!doctype html><title>Away</title><script>location.href = "landed.html";</script>'
    )
    site.page("/landed.html", "<!doctype html><title>Landed</title>")
    site.page("/after.html", "<!doctype html><title>After</title><p>the crawl went on</p>")
    site.page("/popup.html", "<!doctype html><title>Popup</title>")
    site.page("/file.bin", b"\x00" * 100, content_type="application/octet-stream")
    settings = {**BROWSER_SETTINGS, "page_timeout": 4.0, "idle_timeout": 1.0}
    crawl = await crawl_site(tmp_path, site.url("/"), settings)
    rendered = {
        line["url"]: line
        for line in log_lines(crawl.archive)
        if line.get("outcome") in ("rendered", "render_failed")
    }
    home = rendered[site.url("/")]["reason"]
    assert "pop-up" in home and "POST" in home and "download" in home
    assert "page_timeout" in rendered[site.url("/loop.html")]["reason"]
    assert rendered[site.url("/after.html")]["outcome"] == "rendered"
    assert "navigated to" in rendered[site.url("/away.html")]["reason"]
    assert site.hits["/landed.html"] == 1, "a script's navigation target is followed as a link"
    assert site.hits["/post"] == 0


def test_missing_chromium_is_one_line_saying_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.browser"])
    with pytest.raises(ConfigError, match=r"apt-get install chromium") as raised:
        Hooks(pm).configure(Config(plugins={"browser": {"all": True}}))
    assert "\n" not in str(raised.value)


def test_browser_settings_are_checked() -> None:
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.browser"])
    with pytest.raises(ConfigError, match=r"\[plugins\.browser\] tabs: "):
        Hooks(pm).configure(Config(plugins={"browser": {"all": True, "tabs": 0}}))
    with pytest.raises(ConfigError, match="did you mean 'match'"):
        Hooks(pm).configure(Config(plugins={"browser": {"matches": ["x"]}}))
    with pytest.raises(ConfigError, match="invalid regular expression"):
        Hooks(pm).configure(Config(plugins={"browser": {"match": ["("]}}))
