"""``crawl --update`` against nginx serving static files with its own ETag and Last-Modified."""

from __future__ import annotations

import os
import time
from pathlib import Path

from test_update import NOT_MODIFIED, crawl_into, records, since
from warcio.archiveiterator import ArchiveIterator

from bench import server


def request_headers(archive: Path, url: str) -> list[dict[str, str]]:
    """The request headers of every request record for `url`, oldest first."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "request" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    found.append(dict(record.http_headers.headers))
    return found


async def test_nginx_validators_make_an_update_fetch_only_the_changed_file(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(
        '<link rel="stylesheet" href="s.css"><a href="a.html">a</a><a href="b.html">b</a>'
    )
    (root / "s.css").write_text("body { color: black }")
    (root / "a.html").write_text("<p>stays</p>")
    (root / "b.html").write_text("<p>first version</p>")
    archive = tmp_path / "archive"
    with server.serving(root, workers=1) as nginx:
        first = await crawl_into(archive, nginx.url)
        stored = {r.url: r for r in records(archive)}
        assert stored[nginx.url + "a.html"].http.get("ETag") and stored[nginx.url + "a.html"].http.get(
            "Last-Modified"
        )

        update = await crawl_into(archive, nginx.url, mode="update")
        written = since(records(archive), update)
        assert {url: (r.type, r.status) for url, r in written.items()} == {
            nginx.url + name: ("revisit", 304) for name in ("", "s.css", "a.html", "b.html")
        }
        assert all(r.headers["WARC-Profile"] == NOT_MODIFIED for r in written.values())
        asked = request_headers(archive, nginx.url + "a.html")
        assert "If-None-Match" not in asked[0]
        assert asked[1]["If-None-Match"] == stored[nginx.url + "a.html"].http["ETag"]
        assert asked[1]["If-Modified-Since"] == stored[nginx.url + "a.html"].http["Last-Modified"]

    later = time.time() + 2  # another mtime: nginx's ETag and Last-Modified change
    (root / "b.html").write_text("<p>second version</p>")
    os.utime(root / "b.html", (later, later))
    # a new nginx on the same port: the old one's open_file_cache keeps a file's mtime for 60 s
    with server.serving(root, workers=1, port=nginx.port) as nginx:
        again = await crawl_into(archive, nginx.url, mode="update")
        written = since(records(archive), again)
        assert {url: r.type for url, r in written.items() if r.type == "response"} == {
            nginx.url + "b.html": "response"
        }
        assert written[nginx.url + "b.html"].body == b"<p>second version</p>"
        assert again.stats["not_modified"] == 3 and first.number == 1 and again.number == 3
