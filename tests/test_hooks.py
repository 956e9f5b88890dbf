"""Each hook's contract, through a fresh plugin manager (one test_hook_<name> per hook)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import click
import pluggy
import pytest
from aiohttp import web
from click.testing import CliRunner

from archiver import ConfigError, Crawl, FetchError, Link, LinkKind, Page, hookimpl
from archiver.config import Config
from archiver.hookspecs import FetchRequisite
from archiver.manager import Hooks, make_plugin_manager
from archiver.testing import CrawlFn, Site


def test_hook_register_commands() -> None:
    class AddsHello:
        @hookimpl
        def register_commands(self, cli: click.Group) -> None:
            @cli.command()
            def hello() -> None:
                """Say hello."""
                click.echo("hello from a plugin")

    group = click.Group("archiver")
    pm = make_plugin_manager(autoload=False, plugins=[AddsHello()])
    pm.hook.register_commands(cli=group)
    result = CliRunner().invoke(group, ["hello"])
    assert result.output == "hello from a plugin\n"


def test_hook_configure() -> None:
    class Validates:
        @hookimpl
        def configure(self, config: Config, pm: pluggy.PluginManager) -> None:
            unknown = set(config.plugin("strict")) - {"level"}
            if unknown:
                raise ConfigError(f"plugins.strict: unknown key {sorted(unknown)[0]}")
            pm.register(object(), name="strict-run")

    pm = make_plugin_manager(autoload=False, plugins=[Validates()])
    Hooks(pm).configure(Config(plugins={"strict": {"level": 1}}))
    assert pm.has_plugin("strict-run")
    with pytest.raises(ConfigError, match="unknown key oops"):
        Hooks(make_plugin_manager(autoload=False, plugins=[Validates()])).configure(
            Config(plugins={"strict": {"oops": 1}})
        )


async def test_hook_crawl_started(site: Site, crawl_archive: CrawlFn) -> None:
    seen: list[tuple[tuple[str, ...], bool]] = []

    class Starts:
        @hookimpl
        async def crawl_started(self, crawl: Crawl) -> None:
            seen.append((crawl.roots, crawl.resumed))

    site.page("/")
    await crawl_archive(site.url("/"), extra=[Starts()])
    assert seen == [((site.url("/"),), False)]


async def test_hook_accept_url(site: Site, crawl_archive: CrawlFn) -> None:
    calls: list[tuple[str, str | None]] = []

    class Decides:
        @hookimpl
        def accept_url(self, url: str, referrer: str | None) -> bool | None:
            calls.append((url, referrer))
            if url.endswith("/no"):
                return False
            return None

    site.page("/", links=["/no", "/yes"])
    site.page("/yes")
    await crawl_archive(site.url("/"), extra=[Decides()])
    assert (site.url("/yes"), site.url("/")) in calls
    assert set(site.hits) == {"/", "/yes"}


def test_hook_accept_url_first_answer_wins() -> None:
    class Yes:
        @hookimpl
        def accept_url(self) -> bool:
            return True

    class No:
        @hookimpl
        def accept_url(self) -> bool:
            return False

    pm = make_plugin_manager(autoload=False, plugins=[Yes(), No()])
    crawl = Crawl(config=Config(), archive=Path("."), roots=())
    # pluggy calls the last registered first.
    assert Hooks(pm).accept_url("http://h/", None, crawl) is False


async def test_hook_prepare_request(site: Site, crawl_archive: CrawlFn) -> None:
    received: list[str | None] = []

    async def echo(request: web.Request) -> web.Response:
        received.append(request.headers.get("X-Archive-Test"))
        return web.Response(text="ok", content_type="text/plain")

    class AddsHeader:
        @hookimpl
        def prepare_request(self, url: str, headers: MutableMapping[str, str]) -> None:
            headers["X-Archive-Test"] = "yes"

    site.handler("/", echo)
    await crawl_archive(site.url("/"), extra=[AddsHeader()])
    assert received == ["yes"]


async def test_hook_extract_links(site: Site, crawl_archive: CrawlFn) -> None:
    class FromHeader:
        @hookimpl
        def extract_links(self, page: Page) -> list[Any]:
            target = page.header("X-Next")
            return [page.url.rstrip("/") + target] if target else []

    site.page("/", body="no links in the body", headers={"X-Next": "/from-header"})
    site.page("/from-header", content_type="text/plain", body="end")
    await crawl_archive(site.url("/"), plugins=(), extra=[FromHeader()])
    assert site.hits["/from-header"] == 1


async def test_hook_page_fetched(site: Site, crawl_archive: CrawlFn) -> None:
    pages: list[tuple[Page, list[Link]]] = []

    class Sync:
        @hookimpl
        def page_fetched(self, page: Page, links: list[Link]) -> None:
            pages.append((page, list(links)))

    site.page("/", links=["/a"], headers={"X-Dup": "1"})
    site.page("/a")
    await crawl_archive(site.url("/"), extra=[Sync()])
    root = next(page for page, _ in pages if page.url == site.url("/"))
    assert root.status == 200 and root.http_version == "HTTP/1.1"
    assert root.peer == "127.0.0.1"
    assert root.header("content-type") == "text/html; charset=utf-8"
    assert any(k.lower() == "user-agent" for k, _ in root.request_headers)
    assert [link.url for link in dict((p.url, ls) for p, ls in pages)[site.url("/")]] == [site.url("/a")]
    assert all(link.kind is LinkKind.PAGE for _, ls in pages for link in ls)


async def test_hook_discover_links(site: Site, crawl_archive: CrawlFn) -> None:
    answers: dict[str, Page | None] = {}
    fetched: list[str] = []
    refused: list[str] = []

    class Explores:
        @hookimpl
        def page_fetched(self, page: Page) -> None:
            fetched.append(page.url)

        @hookimpl
        async def discover_links(self, page: Page, links: list[Link], fetch: FetchRequisite) -> list[str]:
            if page.url != site.url("/"):
                return []
            assert [link.url for link in links] == [site.url("/style.css")]
            for path in ("/data.json", "/data.json", "/style.css"):
                answers[path + str(len(answers))] = await fetch(site.url(path))
            try:
                await fetch("http://10.255.255.1/private")
            except FetchError as exc:
                refused.append(exc.kind)
            return [page.url + "found"]

    site.page("/", '<link rel="stylesheet" href="/style.css">')
    site.page("/style.css", "p {}", content_type="text/css")
    site.page("/data.json", '{"a": 1}', content_type="application/json")
    site.page("/found", "found")
    await crawl_archive(site.url("/"), extra=[Explores()])
    first, again, style = answers.values()
    assert first is not None and first.status == 200 and first.content == b'{"a": 1}'
    assert first.kind is LinkKind.REQUISITE and first.referrer == site.url("/")
    assert again is None, "a URL the crawl holds is not fetched twice"
    assert style is not None and style.content == b"p {}"
    assert refused == ["refused"]
    assert site.hits["/data.json"] == site.hits["/style.css"] == site.hits["/found"] == 1
    assert fetched.count(site.url("/data.json")) == fetched.count(site.url("/style.css")) == 1


async def test_hook_page_rendered(site: Site, crawl_archive: CrawlFn) -> None:
    rendered: list[tuple[str, str, bytes | None]] = []

    class Renders:
        @hookimpl
        def configure(self, config: Config, pm: pluggy.PluginManager) -> None:
            self.hooks = Hooks(pm)

        @hookimpl
        async def discover_links(self, page: Page, crawl: Crawl) -> None:
            await self.hooks.page_rendered(page, "<p>rendered</p>", b"\x89PNG fake", crawl)

    class Listens:
        @hookimpl
        def page_rendered(self, page: Page, dom: str, screenshot: bytes | None) -> None:
            rendered.append((page.url, dom, screenshot))

    site.page("/", "<p>plain</p>")
    crawl = await crawl_archive(site.url("/"), plugins=("warc",), extra=[Renders(), Listens()])
    assert rendered == [(site.url("/"), "<p>rendered</p>", b"\x89PNG fake")]
    from warcio.archiveiterator import ArchiveIterator

    resources = {}
    for path in (crawl.archive / "warc").glob("*.warc.gz"):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "resource":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    resources[uri] = (
                        record.rec_headers.get_header("Content-Type"),
                        record.content_stream().read(),
                    )
    assert resources == {
        f"urn:dom:{site.url('/')}": ("text/html; charset=utf-8", b"<p>rendered</p>"),
        f"urn:screenshot:{site.url('/')}": ("image/png", b"\x89PNG fake"),
    }


async def test_hook_fetch_failed(crawl_archive: CrawlFn) -> None:
    failures: list[FetchError] = []

    class Failures:
        @hookimpl
        async def fetch_failed(self, url: str, error: FetchError) -> None:
            failures.append(error)

    with pytest.raises(Exception, match="no root URL could be fetched"):
        await crawl_archive("http://127.0.0.1:9/", max_tries=2, extra=[Failures()])
    assert len(failures) == 1
    assert failures[0].kind == "network" and failures[0].attempts == 2


async def test_hook_crawl_finished(site: Site, crawl_archive: CrawlFn) -> None:
    finished: list[Crawl] = []

    class Finishes:
        @hookimpl
        def crawl_finished(self, crawl: Crawl) -> None:
            finished.append(crawl)

    site.page("/")
    await crawl_archive(site.url("/"), extra=[Finishes()])
    assert len(finished) == 1
    assert finished[0].finished_at is not None and not finished[0].interrupted


def test_hook_archive_status(tmp_path: Path) -> None:
    class Reports:
        @hookimpl
        def archive_status(self, archive: Path) -> list[tuple[str, Any]]:
            return [("files", len(list(archive.iterdir())))]

    (tmp_path / "x").write_text("")
    pm = make_plugin_manager(autoload=False, plugins=[Reports()])
    assert Hooks(pm).archive_status(tmp_path) == [("files", 1)]


async def test_hook_register_routes(tmp_path: Path) -> None:
    """A plugin adds a page to `serve`'s application; the bundled search and QA pages arrive so."""
    from aiohttp.test_utils import TestClient, TestServer
    from archiver_plugins.replay.app import make_app
    from archiver_plugins.replay.templating import LIBRARY

    class Hello:
        @hookimpl
        def register_routes(self) -> list[web.RouteDef]:
            async def hello(request: web.Request) -> web.Response:
                return web.Response(text=f"{len(request.app[LIBRARY].handles)} archive")

            return [web.get("/hello", hello)]

    (tmp_path / "warc").mkdir()
    routes = Hooks(make_plugin_manager(autoload=False, plugins=[Hello()])).routes()
    client = TestClient(TestServer(make_app([tmp_path], routes=routes), host="127.0.0.1"))
    await client.start_server()
    try:
        hello = await client.get("/hello")
        assert hello.status == 200 and await hello.text() == "1 archive"
        assert (await client.get("/search")).status == 404  # no plugin added it
        assert (await client.get("/browse")).status == 200  # the replay library's own
    finally:
        await client.close()
    bundled = {route.path for route in Hooks(make_plugin_manager()).routes()}  # type: ignore[attr-defined]
    assert {"/", "/search", "/qa", "/qa/shot"} <= bundled


def test_misspelled_hookimpl_is_rejected() -> None:
    class Typo:
        @hookimpl
        def page_fetchd(self, page: Page) -> None: ...

    with pytest.raises(ConfigError, match="page_fetchd"):
        make_plugin_manager(autoload=False, plugins=[Typo()])


def test_only_the_fetcher_imports_aiohttp() -> None:
    """The fetcher, and the cookie jar it uses (aiohttp's own, with the public suffixes refused)."""
    core = Path(__file__).resolve().parent.parent / "archiver"
    importers = sorted(
        path.name
        for path in core.glob("*.py")
        if any(line.startswith(("import aiohttp", "from aiohttp")) for line in path.read_text().splitlines())
    )
    assert importers == ["cookiejar.py", "fetcher.py"]


def test_core_never_imports_a_plugin() -> None:
    core = Path(__file__).resolve().parent.parent / "archiver"
    for path in core.glob("*.py"):
        assert "archiver_plugins" not in path.read_text(), path.name
