"""A small site that uses every kind of link the mirror export rewrites, for the export tests."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from archiver.testing import Site

FONT = Path("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, so a browser test can tell the image really decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


PLAIN = (
    b"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><TITLE>Plain</TITLE></head>"
    b"<body><p class=x>No links &amp; odd <b>markup<p>unclosed</body></html>\n"
)


def build_site(site: Site, other: Site) -> None:
    """The home page links every way a page can; `other` is a host the crawl does not follow."""
    site.page(
        "/",
        f"""<!doctype html>
<html><head><title>Home page</title>
<link rel="stylesheet" href="/css/site.css" integrity="sha384-bogus" crossorigin="anonymous">
<link rel="icon" href="img/dot.png">
<script src="js/app.js"></script>
</head><body>
<h1 id="title">Home</h1>
<img id="logo" src="img/logo.png" srcset="img/logo.png 1x, /img/logo-2x.png 2x" alt="logo">
<picture><source srcset="/img/wide.png" media="(min-width: 1px)">
<img id="pic" src="img/logo.png" alt=""></picture>
<div id="bg" class="bg" style="background-image: url('/img/bg.png'); width: 10px; height: 10px"></div>
<p class="font-test">Text in the web font</p>
<ul>
<li><a id="to-about" href="about">About</a></li>
<li><a id="to-docs" href="/docs/">Docs</a></li>
<li><a id="to-old" href="/old">Old address</a></li>
<li><a id="to-shop" href="/shop?item=1&amp;color=red">Shop</a></li>
<li><a id="to-missing" href="/missing">Gone</a></li>
<li><a id="to-other" href="{other.url("/elsewhere")}">Elsewhere</a></li>
<li><a id="to-mail" href="mailto:someone@example.invalid">Mail</a></li>
<li><a id="to-top" href="#title">Top</a></li>
<li><a id="to-plain" href="plain.html">Plain</a></li>
</ul>
</body></html>
""",
    )
    site.page(
        "/css/site.css",
        '@import url("fonts.css");\n'
        "h1 { color: rgb(10, 120, 30); }\n"
        ".bg { background-color: rgb(1, 2, 3); }\n"
        "body { background: url(../img/paper.png) repeat; }\n",
        content_type="text/css",
    )
    site.page(
        "/css/fonts.css",
        '@font-face { font-family: "Mirror Test"; src: url("/fonts/test.ttf") format("truetype"); }\n'
        '.font-test { font-family: "Mirror Test", monospace; }\n',
        content_type="text/css",
    )
    font = FONT.read_bytes() if FONT.exists() else b"\0\1\0\0not a real font"
    site.page("/fonts/test.ttf", font, content_type="font/ttf")
    site.page(
        "/js/app.js",
        "document.documentElement.dataset.script = 'ran';\n",
        content_type="text/javascript",
    )
    for name, colour, size in (
        ("logo", (200, 0, 0), 4),
        ("logo-2x", (0, 200, 0), 8),
        ("wide", (0, 0, 200), 6),
        ("bg", (9, 9, 9), 2),
        ("paper", (250, 250, 240), 2),
        ("dot", (1, 1, 1), 1),
    ):
        site.page(f"/img/{name}.png", png(size, size, colour), content_type="image/png")
    site.page("/about", links=["/", "../docs/page"], title="About us")
    site.page("/docs/", links=["page", "/"], title="Docs")
    site.page("/docs/page", links=["/docs/", "/about#team"], title="A doc page")
    site.redirect("/old", "/about", status=301)
    site.page("/shop?item=1&color=red", links=["/"], title="Red item")
    site.page("/plain.html", PLAIN)
