"""End to end: crawl a local aiohttp site with the WARC plugin and read the archive back."""

from __future__ import annotations

import gzip
from pathlib import Path

from aiohttp import web
from archiver_plugins.archive_reader import open_archive
from archiver_plugins.warc.verify import verify_file
from warcio.archiveiterator import ArchiveIterator

HTML = b"<!doctype html><html><body>" + b"<p>chunked and gzipped</p>" * 200 + b"</body></html>"


def chunked_gzip_handler() -> web.RequestHandler:  # type: ignore[type-arg]
    async def serve(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        data = gzip.compress(HTML)
        for start in range(0, len(data), 64):
            await response.write(data[start : start + 64])
        await response.write_eof()
        return response

    return serve


async def test_crawl_archives_every_exchange(site, crawl_archive) -> None:  # type: ignore[no-untyped-def]
    site.page("/", links=["/a", "/old", "/missing", "/zipped", "/copy1", "/copy2"])
    site.page("/a", links=["/"])
    site.redirect("/old", "/a")
    site.page("/copy1", body="<html>same bytes</html>")
    site.page("/copy2", body="<html>same bytes</html>")
    site.handler("/zipped", chunked_gzip_handler())
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"))
    archive_dir = Path(crawl.archive)
    files = sorted((archive_dir / "warc").glob("*.warc.gz"))
    assert len(files) == 1
    assert not list((archive_dir / "warc").glob("*.open"))
    assert verify_file(files[0]).ok

    responses: dict[str, object] = {}
    request_targets: dict[str, str] = {}
    with files[0].open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            uri = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type in ("response", "revisit"):
                responses[uri] = record
                assert record.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
                if record.rec_type == "response":
                    payload = record.raw_stream.read()
                    if uri.endswith("/zipped"):
                        headers = dict(record.http_headers.headers)
                        assert "Transfer-Encoding" not in headers
                        assert headers["Content-Encoding"] == "gzip"
                        assert gzip.decompress(payload) == HTML
            elif record.rec_type == "request":
                request_targets[uri] = record.rec_headers.get_header("WARC-Concurrent-To")
    expected = {site.url(p) for p in ("/", "/a", "/old", "/missing", "/zipped", "/copy1", "/copy2")}
    assert set(responses) == expected
    assert set(request_targets) == expected
    for uri, record in responses.items():
        assert request_targets[uri] == record.rec_headers.get_header("WARC-Record-ID")  # type: ignore[attr-defined]
    kinds = sorted(r.rec_type for u, r in responses.items() if "/copy" in u)  # type: ignore[attr-defined]
    assert kinds == ["response", "revisit"]

    archive = open_archive(archive_dir)
    zipped = archive.read(archive.lookup(site.url("/zipped")))  # type: ignore[arg-type]
    assert zipped.content() == HTML
    assert archive.lookup(site.url("/old")).status == 302  # type: ignore[union-attr]
    assert archive.lookup(site.url("/missing")).status == 404  # type: ignore[union-attr]
    assert crawl.stats["warc.revisits"] == 1
