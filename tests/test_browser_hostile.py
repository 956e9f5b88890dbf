"""The browser capture against hostile pages, in real Chromium.

A page whose script adds more images and frames than the render has time for: every one
the browser asked the crawl for is fetched, logged and archived, after the render ended.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from browser import chromium_path
from mirror_site import png
from warcio.archiveiterator import ArchiveIterator

from archiver.layout import CRAWL_LOG_NAME
from archiver.manager import make_plugin_manager
from archiver.model import Crawl
from archiver.runner import run_crawl
from archiver.testing import Site, make_config

pytestmark = pytest.mark.timeout(90)


async def crawl_with_browser(tmp_path: Path, root: str, browser: dict[str, Any], **overrides: Any) -> Crawl:
    plugins = {"browser": {"all": True, **browser}}
    config = make_config(tmp_path, [root], timeout=3.0, plugins=plugins, **overrides)
    names = ("links", "warc", "browser")
    pm = make_plugin_manager(autoload=False, modules=[f"archiver_plugins.{name}" for name in names])
    return await run_crawl(config, pm)


def archived_uris(archive: Path) -> list[str]:
    """Target URIs of the response and revisit records."""
    uris = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    uris.append(record.rec_headers.get_header("WARC-Target-URI") or "")
    return uris


def log_lines(archive: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (archive / CRAWL_LOG_NAME).read_text().splitlines()]


async def test_requisites_the_browser_asked_for_are_all_fetched_after_the_render_ends(
    site: Site, tmp_path: Path
) -> None:
    chromium_path()
    images, frames = 120, 40
    site.page(
        "/",
        "<!doctype html><title>Many</title><body><script>"
        f"for (let i = 0; i < {images}; i++) {{"
        ' const e = document.createElement("img"); e.src = "img/" + i + ".png";'
        " document.body.appendChild(e); }"
        f"for (let i = 0; i < {frames}; i++) {{"
        ' const e = document.createElement("iframe"); e.src = "frame/" + i + ".html";'
        " document.body.appendChild(e); }"
        "</script></body>",
    )
    for i in range(images):
        site.page(f"/img/{i}.png", png(4, 4, (i, 7, 9)), content_type="image/png", delay=0.03)
    for i in range(frames):
        site.page(f"/frame/{i}.html", f"<!doctype html><p>frame {i}</p>", delay=0.03)
    crawl = await crawl_with_browser(
        tmp_path,
        site.url("/"),
        {"idle_timeout": 0.5, "page_timeout": 2.0, "screenshot": False, "scroll_rounds": 0},
        per_host_concurrency=2,
    )
    lines = log_lines(crawl.archive)
    [render] = [line for line in lines if line.get("outcome") in ("rendered", "render_failed")]
    asked = render["requests"]
    served = [path for path in site.hits if path.startswith(("/img/", "/frame/"))]
    assert asked > 40, "the page asked for too few requisites to show anything"
    assert len(served) >= asked, f"the page asked for {asked}, the server saw {len(served)}"
    assert all(site.hits[path] == 1 for path in served)
    uris = archived_uris(crawl.archive)
    for path in served:
        assert uris.count(site.url(path)) == 1, f"{path} not archived once"
    fetched = {line["url"] for line in lines if line.get("outcome") == "fetched"}
    assert {site.url(path) for path in served} <= fetched
    assert crawl.complete


class Listener(asyncio.DatagramProtocol):
    """A UDP port on 127.0.0.1 that counts the datagrams it receives."""

    def __init__(self) -> None:
        self.received = 0

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.received += 1


async def test_webrtc_sends_no_packet_to_the_stun_and_turn_servers_a_page_names(
    site: Site, tmp_path: Path
) -> None:
    chromium_path()
    loop = asyncio.get_running_loop()
    transport, listener = await loop.create_datagram_endpoint(Listener, local_addr=("127.0.0.1", 0))
    port = transport.get_extra_info("sockname")[1]
    servers = [
        {"urls": f"stun:127.0.0.1:{port}"},
        {"urls": f"turn:127.0.0.1:{port}?transport=udp", "username": "u", "credential": "p"},
    ]
    site.page(
        "/",
        "<!doctype html><title>Peer</title><body><script>"
        f"const pc = new RTCPeerConnection({{iceServers: {json.dumps(servers)}}});"
        'pc.createDataChannel("x");'
        'pc.createOffer().then((offer) => pc.setLocalDescription(offer)).then(() => fetch("offered.json"));'
        "</script></body>",
    )
    site.page("/offered.json", "{}", content_type="application/json")
    try:
        await crawl_with_browser(tmp_path, site.url("/"), {"idle_timeout": 1.5, "screenshot": False})
        await asyncio.sleep(0.5)
    finally:
        transport.close()
    assert site.hits["/offered.json"] == 1, "the page's script did not get as far as its offer"
    assert listener.received == 0, f"{listener.received} STUN/TURN datagrams left the browser"


HOGS = {
    "/objects.html": "const kept = []; for (;;) kept.push(new Array(100000).fill(Math.random()));",
    "/buffers.html": (
        "const kept = []; for (;;) { try { kept.push(new Uint8Array(50000000).fill(1)); } catch (e) {} }"
    ),
    "/nodes.html": (
        "for (;;) { const d = document.createElement('div');"
        " d.textContent = 'x'.repeat(1000) + Math.random(); document.body.appendChild(d); }"
    ),
}


async def test_a_page_that_allocates_without_end_is_ended_for_memory_and_the_crawl_goes_on(
    site: Site, tmp_path: Path
) -> None:
    chromium_path()
    site.page("/", links=[*HOGS, "/after.html"])
    for path, script in HOGS.items():
        site.page(path, f"<!doctype html><title>Hog</title><body><script>{script}</script></body>")
    site.page("/after.html", "<!doctype html><title>After</title><p>the crawl went on</p>")
    crawl = await crawl_with_browser(
        tmp_path,
        site.url("/"),
        {"memory_limit": 256, "page_timeout": 40.0, "idle_timeout": 1.0, "screenshot": False},
    )
    rendered = {
        line["url"]: line
        for line in log_lines(crawl.archive)
        if line.get("outcome") in ("rendered", "render_failed")
    }
    for path in HOGS:
        line = rendered[site.url(path)]
        assert line["outcome"] == "render_failed", path
        assert line["reason"].startswith("memory:"), f"{path}: {line['reason']}"
        assert line["elapsed"] < 30, f"{path} was not ended for its memory but by page_timeout"
    assert rendered[site.url("/after.html")]["outcome"] == "rendered"
    assert rendered[site.url("/")]["outcome"] == "rendered"
    uris = archived_uris(crawl.archive)
    assert {site.url(path) for path in ("/", *HOGS, "/after.html")} <= set(uris)
    assert crawl.stats["browser.over_memory"] == len(HOGS)
    assert crawl.complete
