"""pywb (in its own virtual environment, `.ci/pywb-venv`) replays the exported WACZ and the archive itself.

Two collections in one `wayback` server: `wacz`, loaded with `wb-manager add --unpack-wacz`,
and `warc`, the archive's own WARC files and CDXJ indexes copied in as they are (no
re-indexing by pywb). Each must serve the three pages with their text, the stylesheet the
rewritten page links to, and each page's image, byte for byte.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_site import (
    PAGES,
    PYWB_BIN,
    STYLESHEET,
    Exported,
    crawl_and_export,
    free_port,
    need,
    page_image_name,
)
from mirror_site import png

COLLECTIONS = ("wacz", "warc")


def fetch(url: str) -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers.get("Content-Type", "")


def wb_manager(root: Path, *args: str) -> None:
    done = subprocess.run(
        [str(PYWB_BIN / "wb-manager"), *args], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def pywb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Exported]]:
    """(base URL of a running `wayback` with both collections, the exported site)."""
    need(PYWB_BIN / "wayback", "pywb", "python3 -m venv .ci/pywb-venv && .ci/pywb-venv/bin/pip install pywb")
    base = tmp_path_factory.mktemp("pywb")
    exported = crawl_and_export(base)
    root = base / "pywb"
    root.mkdir()
    for name in COLLECTIONS:
        wb_manager(root, "init", name)
    wb_manager(root, "add", "--unpack-wacz", "wacz", str(exported.wacz))
    for path in (exported.archive / "warc").iterdir():
        if path.name.endswith(".warc.gz"):
            shutil.copy(path, root / "collections" / "warc" / "archive" / path.name)
        elif path.name.endswith(".cdxj"):
            shutil.copy(path, root / "collections" / "warc" / "indexes" / path.name)
    port = free_port()
    log = base / "wayback.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(PYWB_BIN / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
            cwd=root,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fetch(url + "/")
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "wayback did not start in 30 s"
                time.sleep(0.2)
        yield url, exported
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_pywb_replays_pages_stylesheet_and_images(pywb: tuple[str, Exported], collection: str) -> None:
    url, exported = pywb
    for path, (title, words, rgb, link) in PAGES.items():
        status, body, content_type = fetch(f"{url}/{collection}/mp_/{exported.url(path)}")
        assert status == 200 and content_type.startswith("text/html"), (path, status)
        page = body.decode()
        assert words in page and f"<title>{title}</title>" in page
        # The stylesheet and the next page are linked through pywb, not the dead original host.
        stylesheet = html.unescape(re.search(r'<link rel="stylesheet" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
        assert stylesheet.startswith((url, f"/{collection}/")) and stylesheet.endswith("/css/site.css")
        status, css, content_type = fetch(stylesheet if stylesheet.startswith("http") else url + stylesheet)
        assert status == 200 and content_type.startswith("text/css")
        assert css.decode() == STYLESHEET
        anchor = html.unescape(re.search(r'<a id="next" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
        assert f"/{collection}/" in anchor and anchor.endswith(exported.url(link))
        status, image, content_type = fetch(f"{url}/{collection}/id_/{exported.url(page_image_name(path))}")
        assert status == 200 and content_type == "image/png" and image == png(40, 30, rgb)


def test_pywb_reports_what_the_archive_does_not_hold(pywb: tuple[str, Exported]) -> None:
    url, exported = pywb
    for collection in COLLECTIONS:
        status, _body, _type = fetch(f"{url}/{collection}/mp_/{exported.url('/never-crawled.html')}")
        assert status == 404
