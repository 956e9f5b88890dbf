"""URL -> file name rules of the mirror: extensions, queries, escapes, reserved names, collisions."""

from __future__ import annotations

import pytest
from archiver_plugins.mirror.names import allocate, natural_path, relative_href


@pytest.mark.parametrize(
    ("url", "mime", "path"),
    [
        ("http://h.test/", "text/html", ("h.test", "index.html")),
        ("http://h.test/dir/", "text/html", ("h.test", "dir", "index.html")),
        ("http://h.test/about", "text/html", ("h.test", "about.html")),
        ("http://h.test/page.htm", "text/html", ("h.test", "page.htm")),
        ("http://h.test/page.php", "text/html", ("h.test", "page.php.html")),
        ("http://h.test/style.css?v=3", "text/css", ("h.test", "style@v=3.css")),
        ("http://h.test/img?id=7", "image/png", ("h.test", "img@id=7.png")),
        ("http://h.test/?p=2", "text/html", ("h.test", "index@p=2.html")),
        ("http://h.test/photo.JPEG", "image/jpeg", ("h.test", "photo.JPEG")),
        ("http://h.test/data.bin", "", ("h.test", "data.bin")),
        ("http://h.test/feed/", "application/rss+xml", ("h.test", "feed", "index.rss")),
        ("http://h.test:8080/x.js", "text/javascript", ("h.test+8080", "x.js")),
        ("https://H.Test:443/a", "text/plain", ("h.test", "a.txt")),
        ("http://h.test/caf%C3%A9/%7Euser", "text/html", ("h.test", "café", "~user.html")),
        ("http://h.test/a%2Fb", "text/html", ("h.test", "a%2Fb.html")),
        ("http://h.test/100%25", "text/html", ("h.test", "100%25.html")),
        ("http://h.test/%2e%2e/x", "text/html", ("h.test", "%2E%2E", "x.html")),
        ("http://h.test/CON", "text/html", ("h.test", "CON_.html")),
        ("http://h.test/lpt1.txt", "text/plain", ("h.test", "lpt1_.txt")),
        ("http://h.test/dots...", "", ("h.test", "dots%2E%2E%2E")),
        ("http://h.test/q?a=b/c:d", "text/html", ("h.test", "q@a=b%2Fc%3Ad.html")),
    ],
)
def test_natural_path(url: str, mime: str, path: tuple[str, ...]) -> None:
    assert natural_path(url, mime) == path


def test_long_names_are_cut_with_a_hash() -> None:
    one = natural_path("http://h.test/" + "x" * 400, "text/html")[-1]
    two = natural_path("http://h.test/" + "x" * 401, "text/html")[-1]
    assert len(one.encode()) <= 255 and one.endswith(".html") and "~" in one
    assert one != two
    wide = natural_path("http://h.test/" + "%E6%97%A5" * 200, "image/png")[-1]
    assert len(wide.encode()) <= 255 and wide.endswith(".png")
    wide.encode("utf-8")  # cut on a character boundary


def test_collisions_are_settled_deterministically() -> None:
    urls = {
        "http://h.test/a": "",
        "http://h.test/a/b": "text/html",
        "http://h.test/A": "",
        "http://h.test/page": "text/html",
        "http://h.test/Page": "text/html",
        "http://h.test/": "text/html",
        "http://h.test/index.html": "text/html",
    }
    entries = [(url, natural_path(url, mime)) for url, mime in urls.items()]
    first = allocate(entries)
    assert allocate(reversed(entries)) == first
    assert first["http://h.test/a/b"] == ("h.test", "a", "b.html")
    assert first["http://h.test/a"][-1].startswith("a~")  # a file may not take a needed folder's name
    assert first["http://h.test/"] == ("h.test", "index.html")
    assert first["http://h.test/index.html"][-1].startswith("index~")
    assert first["http://h.test/Page"] == ("h.test", "Page.html")  # sorted first: keeps its name
    assert first["http://h.test/page"][-1].startswith("page~")
    keys = [tuple(s.casefold() for s in path) for path in first.values()]
    assert len(keys) == len(set(keys))


def test_reserved_top_level_names_are_not_taken_by_hosts() -> None:
    assert natural_path("http://index.html/", "text/html")[0] == "index.html~host"


def test_relative_href() -> None:
    assert relative_href(("h", "a.html"), ("h", "b.html")) == "b.html"
    assert relative_href(("h", "d", "a.html"), ("h", "c.css")) == "../c.css"
    assert relative_href(("h", "a.html"), ("g", "x y", "c%@.css")) == "../g/x%20y/c%25@.css"
    assert relative_href(("index.html",), ("h", "index.html")) == "h/index.html"
    assert relative_href(("h", "a.html"), ("h", "a#b?.html")) == "a%23b%3F.html"
