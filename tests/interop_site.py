"""One small crawled and exported site shared by the interop tests, and where the real clients live.

The site is three pages, each with its own heading, a shared stylesheet and an image of its
own colour, linked in a ring. It is crawled into an archive, exported as WACZ, and its server
is shut down before any client runs, so whatever a client shows comes from the archive.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from archiver_plugins.mirror.export import ExportOptions, export_mirror
from mirror_site import png

from archiver.manager import make_plugin_manager
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

ROOT = Path(__file__).resolve().parent.parent
REPLAYWEB_DIR = Path(os.environ.get("REPLAYWEB_DIR", ROOT / ".ci" / "node" / "replaywebpage"))
PYWB_BIN = Path(os.environ.get("PYWB_BIN", ROOT / ".ci" / "pywb-venv" / "bin"))

HEADING_RGB = (12, 34, 156)
STYLESHEET = "h1 { color: rgb(12, 34, 156); } body { margin: 8px; }\n"
PAGES = {
    "/": ("First page", "Words only the first page holds", (200, 30, 30), "/second.html"),
    "/second.html": ("Second page", "Words only the second page holds", (30, 200, 30), "/third.html"),
    "/third.html": ("Third page", "Words only the third page holds", (30, 30, 200), "/"),
}


@dataclass(frozen=True)
class Exported:
    archive: Path
    wacz: Path
    origin: str  # http://127.0.0.1:PORT of the site as it was crawled

    def url(self, path: str) -> str:
        return self.origin + path


def need(path: Path, what: str, install: str) -> Path:
    """`path`, or fail under CI / skip on a developer machine when the client is not installed."""
    if not path.exists():
        message = f"{what} is not installed at {path} ({install}; `bash .ci/test.sh` does it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def page_image_name(path: str) -> str:
    return "/img/" + (path.strip("/").removesuffix(".html") or "first") + ".png"


def _build(site: Site) -> None:
    site.page("/css/site.css", STYLESHEET, content_type="text/css")
    for path, (title, words, rgb, link) in PAGES.items():
        site.page(page_image_name(path), png(40, 30, rgb), content_type="image/png")
        site.page(
            path,
            f"""<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="/css/site.css"></head>
<body><h1 id="heading">{title}</h1><p id="words">{words}</p>
<img id="picture" src="{page_image_name(path)}" width="40" height="30" alt="">
<p><a id="next" href="{link}">Next page</a></p></body></html>""",
        )


async def _crawl(base: Path) -> Exported:
    site = Site()
    await site.start()
    try:
        _build(site)
        config = make_config(base, [site.url("/")], output=str(base / "site.archive"))
        plugins = make_plugin_manager(
            autoload=False, modules=["archiver_plugins.links", "archiver_plugins.warc"]
        )
        await run_crawl(config, plugins)
        origin = site.url("").rstrip("/")
    finally:
        await site.close()
    archive = base / "site.archive"
    wacz = base / "site.wacz"
    await asyncio.to_thread(export_mirror, archive, wacz, ExportOptions(format="wacz"))
    return Exported(archive, wacz, origin)


def crawl_and_export(base: Path) -> Exported:
    """Crawl the three-page site into `base/site.archive` and export `base/site.wacz`."""
    return asyncio.run(_crawl(base))
