"""A site built by scripts, for the browser capture's tests.

The home page's text comes from fetch() of a JSON file, a script adds its link (another URL
exists only through history.pushState), its image loads when scrolled to and is reached
through a redirect, and it links a page that never stops loading.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from mirror_site import png

from archiver.testing import Site

TEXT = "Hydrangeas turn blue on acid soil"

HOME = """<!doctype html><html><head><title>Script garden</title></head>
<body><h1>Script garden</h1><div id="text">loading...</div><nav id="nav"></nav>
<div style="height: 2600px">spacer</div>
<img id="lazy" class="lazy" data-src="img/old-lazy.png" width="40" height="30" alt="lazy">
<p><a href="forever.html">a page that never stops loading</a></p>
<script>
fetch("data.json").then((r) => r.json()).then((d) => {
  document.getElementById("text").textContent = d.text;
});
const a = document.createElement("a");
a.href = "added.html";
a.textContent = "added by a script";
document.getElementById("nav").appendChild(a);
history.pushState({}, "", "pushed.html");
history.replaceState({}, "", "./");
new IntersectionObserver((entries, observer) => {
  for (const entry of entries) {
    if (entry.isIntersecting) {
      entry.target.src = entry.target.dataset.src;
      observer.unobserve(entry.target);
    }
  }
}).observe(document.getElementById("lazy"));
</script></body></html>"""

FOREVER = """<!doctype html><html><head><title>Ticking</title></head><body><p id="n">0</p>
<script>
let n = 0;
setInterval(() => fetch("tick.json", {cache: "no-store"}).then(() => {
  document.getElementById("n").textContent = String(++n);
}), 100);
fetch("hang.json");
</script></body></html>"""


def build_script_page(site: Site) -> None:
    """The home page and everything its scripts ask for; its link to /forever.html is a 404."""
    site.page("/", HOME)
    site.page("/data.json", json.dumps({"text": TEXT}), content_type="application/json")
    site.page("/added.html", "<!doctype html><title>Added</title><p>added page</p>")
    site.page("/pushed.html", "<!doctype html><title>Pushed</title><p>pushed page</p>")
    site.page("/img/lazy.png", png(40, 30, (200, 40, 90)), content_type="image/png")
    site.redirect("/img/old-lazy.png", "/img/lazy.png", status=301)


def build_site(site: Site) -> None:
    """The home page and the page that never stops loading."""
    build_script_page(site)
    site.page("/forever.html", FOREVER)
    site.page("/tick.json", "{}", content_type="application/json")

    async def hang(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b"[")
        for _ in range(60):  # ends when the crawl's timeout cuts it
            await response.write(b" ")
            await asyncio.sleep(0.1)
        return response

    site.handler("/hang.json", hang)
