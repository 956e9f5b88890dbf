"""A small site whose home page loads an image, a font and JSON only through its stylesheet and
its script, so a plain crawl (which reads HTML and CSS, not scripts) misses them.

* ``/style.css`` (linked by the HTML) paints the page dark and sets an image with
  ``image-set("set.png" 1x)``, a form the crawl's CSS reader does not take for a URL;
* ``/app.js`` adds ``/fonts.css`` (an ``@font-face`` for ``/face.woff2``) and fetches
  ``/data.json``, whose text it writes into the page, and ``/gone.json``, which the site
  answers 404, and sets an image's ``src`` to ``/toggle.png`` (as sphinx's togglers do);
* ``/plain.html`` loads one image from its HTML: nothing of it is missed.

With `live_port`, the home page's script also fetches from a server on that port, by
a URL built at run time (the crawl cannot see it): QA must stop it before it is sent.
"""

from __future__ import annotations

import json

from archiver.testing import Resource, Site

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f0005000201a5f5a52b0000000049454e44ae426082"
)
TEXT = "Text that only the JSON holds"
STYLE = (
    "body { background: #203040; color: #fff; margin: 0; min-height: 600px }"
    ' .pic { width: 64px; height: 64px; background-image: image-set("set.png" 1x) }'
)
HIDDEN = ("/fonts.css", "/set.png", "/data.json", "/gone.json", "/toggle.png", "/face.woff2")
"""What a plain crawl misses: the first five are found by replaying the home page, the font
once its stylesheet is there (``/gone.json`` is a 404)."""


def build_site(site: Site, live_port: int | None = None) -> None:
    escape = ""
    if live_port is not None:
        escape = f" fetch('http://' + '127.0.0.1:' + {live_port} + '/away').catch(() => null);"
    script = (
        "const link = document.createElement('link'); link.rel = 'stylesheet'; link.href = 'fonts.css';"
        " document.head.appendChild(link);"
        " fetch('data.json').then((r) => r.json()).then((d) => {"
        " document.getElementById('text').textContent = d.text; });"
        " fetch('gone.json').catch(() => null);"
        " document.addEventListener('DOMContentLoaded', () => {"
        " const image = document.createElement('img'); document.body.appendChild(image);"
        " image.src = 'toggle.png'; });" + escape
    )
    site.serve(
        {
            "/": (
                '<!doctype html><html><head><title>Home</title><link rel="stylesheet" href="style.css">'
                '</head><body><h1>Home</h1><p id="text">waiting</p><div class="pic"></div>'
                '<a href="plain.html">plain</a><script src="app.js"></script></body></html>'
            ),
            "/plain.html": (
                "<!doctype html><html><head><title>Plain</title></head>"
                '<body><p>Nothing hidden here.</p><img src="a.png"></body></html>'
            ),
            "/style.css": Resource(STYLE, content_type="text/css"),
            "/app.js": Resource(script, content_type="application/javascript"),
            "/fonts.css": Resource(
                '@font-face { font-family: Face; src: url("face.woff2") format("woff2") }'
                " h1 { font-family: Face, sans-serif }",
                content_type="text/css",
            ),
            "/data.json": Resource(json.dumps({"text": TEXT}), content_type="application/json"),
            "/set.png": Resource(PNG, content_type="image/png"),
            "/a.png": Resource(PNG, content_type="image/png"),
            "/toggle.png": Resource(PNG, content_type="image/png"),
            "/face.woff2": Resource(b"wOF2 not really a font", content_type="font/woff2"),
        }
    )
