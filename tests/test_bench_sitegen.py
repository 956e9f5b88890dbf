"""The benchmark's site generator: its link graph, its determinism, and the site nginx serves."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from aiohttp import web
from browser import launch_browser
from selectolax.lexbor import LexborHTMLParser

from bench import server, sitegen

PAGES = 60
LINKS = "a[href], link[href], img[src], script[src]"
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)""")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("site")
    return out, sitegen.generate(out, pages=PAGES, seed=7)


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(file.relative_to(folder)).encode() + file.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    sitegen.generate(tmp_path / "a", pages=20, seed=1)
    sitegen.generate(tmp_path / "b", pages=20, seed=1)
    sitegen.generate(tmp_path / "c", pages=20, seed=2)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")


def test_pages_have_20_to_50_links_and_5_to_20_kb_of_text(site: tuple[Path, dict[str, Any]]) -> None:
    out, _ = site
    files = sorted((out / "site").rglob("*.html"))
    assert len(files) == PAGES
    counts, sizes = [], []
    for file in files:
        tree = LexborHTMLParser(file.read_text())
        counts.append(len(tree.css("a[href]")))
        assert tree.body is not None
        sizes.append(len(tree.body.text()))
        assert tree.css_first("title") is not None and tree.css_first("h1") is not None
    assert min(counts) >= 20 and max(counts) <= 60
    assert 20 <= statistics.median(counts) <= 50
    assert min(sizes) >= 4_000 and max(sizes) <= 24_000


def test_expected_set_has_every_kind_of_url(site: tuple[Path, dict[str, Any]]) -> None:
    out, expected = site
    urls = expected["urls"]
    assert isinstance(urls, dict)
    kinds = {u["kind"] for u in urls.values()}
    assert kinds == {"page", "asset", "redirect", "missing"}
    assert urls["/"]["status"] == 200
    assert {"/loop/a.html", "/loop/b.html"} <= set(urls)
    assert any("@2x." in u for u in urls)
    assert "/img/bg-texture.png" in expected["css_only"]
    assert expected["canonical_duplicates"], "query variants equal once canonicalized"
    assert all(":" in link for link in expected["offsite"])
    assert not any(u.startswith("http") or "#" in u for u in urls)
    redirects = json.loads((out / "redirects.json").read_text())
    conf = (out / "nginx-redirects.conf").read_text().splitlines()
    assert len(conf) == len(redirects)
    assert all(f"{src} {dst};" in conf for src, dst in redirects.items())


def crawl_served(root: str) -> dict[str, int]:
    """A reference breadth-first crawl: every same-origin link, requisites and CSS url() too."""
    parts = urlsplit(root)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    seen: dict[str, int] = {}
    queue = deque([root])
    queued = {root}
    while queue:
        url = queue.popleft()
        connection.request("GET", url[len(root) - 1 :])
        response = connection.getresponse()
        body = response.read()
        seen[url] = response.status
        found: list[str] = []
        if response.status == 301:
            found.append(response.getheader("Location") or "")
        elif response.getheader("Content-Type", "").startswith("text/html"):
            tree = LexborHTMLParser(body.decode())
            for node in tree.css(LINKS):
                found.append(node.attributes.get("href") or node.attributes.get("src") or "")
            for node in tree.css("img[srcset]"):
                found.append((node.attributes.get("srcset") or "").split()[0])
        elif response.getheader("Content-Type", "").startswith("text/css"):
            found += CSS_URL.findall(body.decode())
            found += re.findall(r'@import url\("([^"]+)"', body.decode())
        for href in found:
            target = urldefrag(urljoin(url, href))[0]
            if target.startswith(root) and target not in queued:
                queued.add(target)
                queue.append(target)
    connection.close()
    return seen


@pytest.mark.timeout(300)
def test_nginx_serves_what_the_expected_set_says(site: tuple[Path, dict[str, Any]]) -> None:
    out, expected = site
    with server.start(out) as nginx:
        fetched = crawl_served(nginx.url)
        origin = nginx.url.rstrip("/")
    urls = expected["urls"]
    assert isinstance(urls, dict)
    assert {u[len(origin) :]: s for u, s in fetched.items()} == {u: v["status"] for u, v in urls.items()}
    assert nginx.process.poll() is not None, "stopped on leaving the block"


@pytest.mark.timeout(300)
def test_slow_mode_delays_every_response(site: tuple[Path, dict[str, Any]]) -> None:
    out, _ = site
    with server.start(out, slow=True, delay=0.05) as nginx:
        connection = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=10)
        for path in ("/", "/old/0.html", "/missing/none.html"):
            started = time.perf_counter()
            connection.request("GET", path)
            connection.getresponse().read()
            assert time.perf_counter() - started >= 0.045
        connection.close()


async def test_images_and_font_decode_in_chromium(site: tuple[Path, dict[str, Any]]) -> None:
    """Every image and the font of the demo site decode in a browser: a broken-image icon or
    a font error in replay must mean a replay bug, not a generated file no browser reads."""
    out, _ = site
    root = out / "site"
    app = web.Application()
    app.router.add_static("/", root)
    runner = web.AppRunner(app)
    await runner.setup()
    listening = web.TCPSite(runner, "127.0.0.1", 0)
    await listening.start()
    port = listening._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    images = sorted("/" + p.relative_to(root).as_posix() for p in (root / "img").iterdir())
    assert {Path(i).suffix for i in images} == {".png", ".jpg", ".gif"}
    try:
        async with launch_browser() as browser:
            page = await browser.new_page()  # type: ignore[attr-defined]
            console: list[str] = []
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            await page.goto(f"http://127.0.0.1:{port}/index.html")
            found = await page.evaluate(
                """async (images) => {
                    await document.fonts.ready;
                    const font = new FontFace("Probe", "url(/fonts/body.woff2)");
                    let fontStatus = "loaded";
                    try { await font.load(); } catch (error) { fontStatus = String(error); }
                    const decoded = {};
                    for (const src of images) {
                        const image = new Image();
                        image.src = src;
                        try { await image.decode(); decoded[src] = image.naturalWidth; }
                        catch (error) { decoded[src] = String(error); }
                    }
                    return {fontStatus, decoded, faces: [...document.fonts].map((f) => f.status)};
                }""",
                [*images, "/favicon.ico"],
            )
    finally:
        await runner.cleanup()
    assert found["fontStatus"] == "loaded" and found["faces"] == ["loaded"], found
    decoded = found["decoded"]
    assert {src: width for src, width in decoded.items() if not isinstance(width, int) or width < 1} == {}
    assert console == []
