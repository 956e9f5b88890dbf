"""`archiver changes` after a real `crawl --update` against a site that sends ETags and answers 304."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import pytest
from aiohttp import web
from changing_site import FIRST, SECOND, crawl, next_second

from archiver.cli import main
from archiver.testing import Site


def crawl_has_update() -> bool:
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text):
        main(["crawl", "--help"])
    return "--update" in help_text.getvalue()


pytestmark = pytest.mark.skipif(not crawl_has_update(), reason="needs `archiver crawl --update`")


def serve_with_etags(site: Site, pages: dict[str, str]) -> None:
    """Each page with a strong ETag of its text, answering 304 to a matching If-None-Match."""
    site.handlers.clear()
    for path, text in pages.items():
        etag = f'"{abs(hash(text)):x}"'

        async def handler(request: web.Request, text: str = text, etag: str = etag) -> web.StreamResponse:
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers={"ETag": etag})
            return web.Response(text=text, content_type="text/html", headers={"ETag": etag})

        site.handler(path, handler)


async def test_changes_after_an_update(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    serve_with_etags(site, FIRST)
    await crawl(site, archive)
    await next_second()
    serve_with_etags(site, {path: text for path, text in SECOND.items() if path != "/dropped"})
    args = ["crawl", "--update", str(archive), "-q", "--disable-plugin", "index"]
    assert await asyncio.to_thread(main, args) == 0
    assert site.hits["/same"] == 2

    capsys.readouterr()
    assert main(["changes", str(archive), "--json", "--unchanged"]) == 0
    report = json.loads(capsys.readouterr().out)
    base = site.url("")
    found = {
        kind: {item["url"].removeprefix(base): item["how"] for item in items}
        for kind, items in report["urls"].items()
    }
    assert [run["mode"] for run in report["newer"]["crawls"]] == ["update"]
    assert found["unchanged"] == {"/same": "server-not-modified"}
    assert found["changed"] == {"/": "new payload", "/edited": "new payload"}
    assert found["added"] == {"/fresh": "new"}
    assert found["removed"] == {"/gone": "404", "/dropped": "not reached"}
