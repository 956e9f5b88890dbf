"""`archiver serve` against hostile archives and hostile neighbours: no way out to the live web.

The browser tests run real Chromium against the replay server with a second server on
127.0.0.1 standing in for the live web; nothing intercepts the browser's requests, so
"the live site saw no request" (and, for WebRTC, "the STUN and TURN listeners saw no
packet") is what the replay itself achieves.
"""

from __future__ import annotations

import asyncio
import io
import random
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.mirror.export import ExportOptions, export_mirror
from archiver_plugins.mirror.html import rewrite_html as export_rewrite
from archiver_plugins.mirror.mapping import Mapped
from archiver_plugins.replay.app import machine_names, make_app
from archiver_plugins.replay.replay import UrlRewriter
from archiver_plugins.replay.replay import rewrite_html as replay_rewrite
from browser import launch_browser
from selectolax.lexbor import LexborHTMLParser
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from yarl import URL

from archiver.testing import Site

ARCHIVED = "http://archived.test"
STAMP = "20240501100000"


def write_archive(folder: Path, pages: dict[str, tuple[str, str | bytes]]) -> Path:
    """An archive holding `pages` (path -> (content type, body)) of ARCHIVED, as another tool wrote it."""
    path = folder / "warc" / "hostile.warc.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for page, (kind, body) in pages.items():
            data = body.encode() if isinstance(body, str) else body
            http = StatusAndHeaders("200 OK", [("Content-Type", kind)], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                ARCHIVED + page,
                "response",
                payload=io.BytesIO(data),
                length=len(data),
                http_headers=http,
                warc_headers_dict={"WARC-Date": "2024-05-01T10:00:00Z"},
            )
            writer.write_record(record)
    return folder


@asynccontextmanager
async def serving(archive: Path, **options: Any) -> AsyncIterator[TestClient[Any, Any]]:
    client = TestClient(TestServer(make_app([archive], **options), host="127.0.0.1"))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


# -- rewriting by the tokenizer's view of the document --------------------------------

LIVE = "http://live.test"
REFRESH = '<meta http-equiv="refresh" content="1;url={live}/{n}">'
# Each hides the refresh from a pattern-based scanner; a browser sees it.
HIDING = [
    "<!-->{refresh}-->",
    "<!--->{refresh}-->",
    "<!-- x --!>{refresh}-->",
    "<!-- x --!>{refresh}",
    "</p title='><!--'>{refresh}-->",
    '</div x="><!--">{refresh}-->',
    "<p title='<!--'>{refresh}-->",
    "<svg><style>{refresh}</style></svg>",
    "<svg><title>{refresh}</title></svg>",
    "<math><style><p>x</p>{refresh}</style></math>",
    "<script><!--<script></script><!--</script>{refresh}-->",
    "<noscript>{refresh}</noscript>",
    "<![CDATA[ > ]]>{refresh}<!-- ]]> -->",
    '<!DOCTYPE html PUBLIC "a>b">{refresh}<!-- " -->',
    '<p a=b"c>{refresh}<i d=">',
    "<?php echo '?>' ?>{refresh}",
    "</ x>{refresh}<!-- -->",
    "<style>/* <!-- */</style>{refresh}-->",
    "<textarea><!--</textarea>{refresh}-->",
    "<select><style><!--</style>{refresh}--></select>",
]


def hostile_documents() -> list[str]:
    return [
        "<html><head><title>t</title></head><body>"
        + hiding.format(refresh=REFRESH.format(live=LIVE, n=n))
        + "</body></html>"
        for n, hiding in enumerate(HIDING)
    ]


def refreshes(document: str) -> list[str]:
    """The refresh targets a browser-grade parser (lexbor) finds in `document`."""
    found = []
    for meta in LexborHTMLParser(document).css("meta"):
        if (meta.attributes.get("http-equiv") or "").strip().lower() == "refresh":
            found.append((meta.attributes.get("content") or "").split("url=", 1)[-1])
    return found


@pytest.mark.parametrize("document", hostile_documents())
def test_replay_rewrites_every_refresh_a_browser_sees(document: str) -> None:
    assert any(target.startswith(LIVE) for target in refreshes(document))  # the browser's view
    out = replay_rewrite(document, UrlRewriter(ARCHIVED + "/page", STAMP))
    targets = refreshes(out)
    assert targets and all(t.startswith(("/replay/", "/missing/")) for t in targets), out


@pytest.mark.parametrize("document", hostile_documents())
def test_export_disarms_every_refresh_a_browser_sees(document: str) -> None:
    def links(raw: str, base: str, kind: str) -> Mapped:
        target = urljoin(base, raw)
        return Mapped(None, missing=True, target=target, reason="not archived")

    out = export_rewrite(document, ARCHIVED + "/page", links)
    assert refreshes(out) == [], out  # the refresh to the web is kept but inert
    assert "data-archived-http-equiv" in out
    unchanged = out.replace("data-archived-http-equiv", "http-equiv")
    assert unchanged == document  # every other byte as archived


FRAGMENTS = [
    *("<!--", "-->", "--!>", "<!-->", "<!--->", "<![CDATA[", "]]>", "<!doctype html>", "<?x", ">"),
    *("<svg>", "</svg>", "<math>", "</math>", "<foreignObject>", "</foreignObject>", "<mtext>", "<desc>"),
    *("<annotation-xml encoding='text/html'>", "<font color=red>", "<style>", "</style>", "<script>"),
    *("</script>", "<title>", "</title>", "<textarea>", "</textarea>", "<noscript>", "</noscript>"),
    *("<xmp>", "</xmp>", "<iframe>", "</iframe>", "<plaintext>", "<template>", "</template>", "<select>"),
    *("</select>", "<table>", "<td>", "<p>", "</p>", "<b>", "<div>", "</div>", "<span>", "</span>", "</br>"),
    *("<br/>", "<p title='", "'>", '"', "'", "</div x='>'>", "<a href=", "/>", "<", "=", " "),
]


def test_no_refresh_to_the_web_survives_either_rewriter() -> None:
    """Random tag soup around a refresh: whenever a browser-grade parser sees the refresh in
    the archived page, it sees none to the web in the replayed or exported one."""
    chance = random.Random(19)
    refresh = REFRESH.format(live=LIVE, n="x")
    checked = 0
    for _ in range(1500):
        parts = [chance.choice(FRAGMENTS) for _ in range(chance.randint(1, 12))]
        parts.insert(chance.randint(0, len(parts)), refresh)
        document = "".join(parts)
        if not any(t.startswith(LIVE) for t in refreshes(document)):
            continue
        checked += 1
        replayed = replay_rewrite(document, UrlRewriter(ARCHIVED + "/page", STAMP))
        assert all(t.startswith(("/replay/", "/missing/")) for t in refreshes(replayed)), document
        exported = export_rewrite(document, ARCHIVED + "/page", lambda raw, base, kind: Mapped(None, True))
        assert refreshes(exported) == [], document
    assert checked > 500


# -- the search page's parameters ------------------------------------------------------


@pytest.mark.parametrize("page", ["%C2%B2", "%D9%A3", "%EF%BC%93", "%C2%B9%C2%B9", "1%C2%B2", "%F0%9D%9F%97"])
async def test_non_ascii_digits_as_page_number(tmp_path: Path, page: str) -> None:
    """'²'.isdigit() is true but int('²') fails: page 1, never a 500."""
    archive = write_archive(tmp_path / "a", {"/": ("text/html", "<title>zebra</title><p>zebra</p>")})
    async with serving(archive) as client:
        for path in (f"/search?q=zebra&page={page}", f"/browse?site=archived.test&page={page}"):
            response = await client.get(URL(path, encoded=True))
            body = await response.text()
            assert response.status == 200, (path, response.status, body[:300])
            assert "Traceback" not in body


# -- CORS ------------------------------------------------------------------------------


async def test_replay_answers_cross_origin_reads_only_when_asked(tmp_path: Path) -> None:
    archive = write_archive(tmp_path / "a", {"/secret": ("text/plain", "archived")})
    raw = f"/replay/{STAMP}id_/{ARCHIVED}/secret"
    async with serving(archive, cors=["https://tool.example"]) as client:
        plain = await client.get(raw)
        assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers
        other = await client.get(raw, headers={"Origin": "https://evil.example"})
        assert "Access-Control-Allow-Origin" not in other.headers
        anonymous = await client.get(raw, headers={"Origin": "null", "Referer": "https://evil.example/x"})
        assert "Access-Control-Allow-Origin" not in anonymous.headers
        missing = await client.get(f"/replay/{STAMP}id_/{ARCHIVED}/none", headers={"Origin": "https://e.x"})
        assert missing.status == 404 and "Access-Control-Allow-Origin" not in missing.headers

        tool = await client.get(raw, headers={"Origin": "https://tool.example"})
        assert tool.headers["Access-Control-Allow-Origin"] == "https://tool.example"
        assert "Origin" in tool.headers["Vary"]
        font = await client.get(raw, headers={"Origin": "null", "Sec-Fetch-Dest": "font"})
        assert font.headers["Access-Control-Allow-Origin"] == "null"  # a replayed page's web font
        fetched = await client.get(raw, headers={"Origin": "null", "Sec-Fetch-Dest": "empty"})
        assert "Access-Control-Allow-Origin" not in fetched.headers
    async with serving(archive) as client:
        tool = await client.get(raw, headers={"Origin": "https://tool.example"})
        assert "Access-Control-Allow-Origin" not in tool.headers


async def test_a_replayed_page_reads_its_own_archive_with_the_servers_token(tmp_path: Path) -> None:
    archive = write_archive(
        tmp_path / "a",
        {
            "/": ("text/html", "<html><head><title>p</title></head><body>x</body></html>"),
            "/data.json": ("application/json", '{"a": 1}'),
        },
    )
    async with serving(archive) as client:
        page = await (await client.get(f"/replay/{STAMP}/{ARCHIVED}/")).text()
        found = re.search(r'const token = "([A-Za-z0-9_-]+)", name = "X-Archiver-Replay"', page)
        assert found is not None and page.index("<script>") < page.index("<title>")
        data = f"/replay/{STAMP}/{ARCHIVED}/data.json"
        preflight = await client.options(
            data, headers={"Origin": "null", "Access-Control-Request-Headers": "x-archiver-replay"}
        )
        assert preflight.headers["Access-Control-Allow-Origin"] == "null"
        assert preflight.headers["Access-Control-Allow-Headers"] == "X-Archiver-Replay"
        own = await client.get(data, headers={"Origin": "null", "X-Archiver-Replay": found[1]})
        assert own.headers["Access-Control-Allow-Origin"] == "null" and await own.text() == '{"a": 1}'
        guessed = await client.get(data, headers={"Origin": "null", "X-Archiver-Replay": "guess"})
        assert "Access-Control-Allow-Origin" not in guessed.headers
        elsewhere = await client.options(data, headers={"Origin": "https://evil.example"})
        assert "Access-Control-Allow-Origin" not in elsewhere.headers


# -- Host allow-list beyond loopback ---------------------------------------------------


async def test_host_allow_list_when_listening_on_all_addresses(tmp_path: Path) -> None:
    archive = write_archive(tmp_path / "a", {"/": ("text/html", "<title>t</title>")})
    server = TestServer(make_app([archive], host="0.0.0.0", allow_hosts=["archive.lan"]), host="0.0.0.0")
    await server.start_server()
    try:
        base = f"http://127.0.0.1:{server.port}/"
        async with ClientSession() as session:

            async def status(host: str) -> int:
                async with session.get(base, headers={"Host": host}) as response:
                    await response.read()
                    return response.status

            assert await status("rebind.evil.com") == 421
            assert await status(f"rebind.evil.com:{server.port}") == 421
            assert await status("127.0.0.1.evil.com") == 421
            assert await status(f"127.0.0.1:{server.port}") == 200
            assert await status("192.0.2.7") == 200  # an address: no rebinding through it
            assert await status("[fd00::2]:80") == 200
            assert await status("archive.lan") == 200
            assert await status(f"localhost:{server.port}") == 200
            for name in machine_names():
                assert await status(f"{name}:{server.port}") == 200
    finally:
        await server.close()


def test_serve_warns_about_the_host_allow_list(tmp_path: Path) -> None:
    archive = write_archive(tmp_path / "a", {"/": ("text/html", "<title>t</title>")})
    process = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve", str(archive), "--host", "0.0.0.0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        warning = process.stderr.readline()
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert "anyone who can reach it can read the archive" in warning
    assert "--allow-host" in warning and "IP addresses" in warning
    assert socket.gethostname().lower().split(".")[0] in warning


def test_serve_rejects_a_bad_cors_origin(tmp_path: Path) -> None:
    archive = write_archive(tmp_path / "a", {"/": ("text/html", "<title>t</title>")})
    result = subprocess.run(
        [sys.executable, "-m", "archiver", "serve", str(archive), "--cors", "*"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and "--cors *" in result.stderr and "Traceback" not in result.stderr


# -- in Chromium: nothing reaches the live web -----------------------------------------


@asynccontextmanager
async def replay_server(archive: Path) -> AsyncIterator[str]:
    server = TestServer(make_app([archive]), host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def open_all(context: Any, urls: list[str], settle_ms: int) -> list[Any]:
    """Open every URL in its own tab at once, then give their timers and scripts `settle_ms`."""
    pages = [await context.new_page() for _ in urls]
    await asyncio.gather(*(page.goto(url, wait_until="load") for page, url in zip(pages, urls, strict=True)))
    await pages[0].wait_for_timeout(settle_ms)
    return pages


REFRESHES_SEEN = """() => [...document.querySelectorAll('meta')]
    .filter(m => (m.httpEquiv || '').trim().toLowerCase() === 'refresh')
    .map(m => new URL(m.content.split(/url=/i).pop(), location.href).href)"""


IN_CHROMIUM = (0, 1, 2, 4, 7, 10)
"""The three comment tricks, a quoted '>' in an end tag, <style> in SVG, <script> escapes."""


async def test_comment_tricks_never_take_replay_or_export_to_the_live_web(site: Site, tmp_path: Path) -> None:
    live = site.url("")
    documents = hostile_documents()
    pages: dict[str, tuple[str, str | bytes]] = {
        f"/{n}": ("text/html", documents[n].replace(LIVE, live)) for n in IN_CHROMIUM
    }
    archive = write_archive(tmp_path / "a", pages)
    mirror = tmp_path / "mirror"
    result = await asyncio.to_thread(export_mirror, archive, mirror, ExportOptions())
    assert result.errors == []
    exported = sorted(p.as_uri() for p in mirror.rglob("*.html") if p.parent != mirror)
    assert len(exported) == len(pages)
    requested: list[str] = []
    async with replay_server(archive) as base, launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]
        context.on("request", lambda request: requested.append(request.url))
        await open_all(context, [f"{base}/replay/{STAMP}/{ARCHIVED}{p}" for p in pages], 2500)
        for n in IN_CHROMIUM:  # Chromium saw each refresh, and it led into the archive
            assert f"{base}/replay/{STAMP}/{live}/{n}" in requested, (n, requested)
        for tab in await open_all(context, exported, 2500):
            assert await tab.evaluate(REFRESHES_SEEN) == [], tab.url
    assert sum(site.hits.values()) == 0, dict(site.hits)


async def test_popups_downloads_and_navigation_stay_off_the_live_web(site: Site, tmp_path: Path) -> None:
    live = site.url("")
    click = (
        'var a = document.createElement("a"); a.href = "{href}"; {extra} document.body.append(a); a.click();'
    )
    scripts = {
        "/open": f'window.open("{live}/open");',
        "/blank": click.format(href=f"{live}/blank", extra='a.target = "_blank";'),
        "/download": click.format(href=f"{live}/download", extra='a.download = "x.bin";'),
        "/location": f'setTimeout(() => {{ location.href = "{live}/location"; }}, 50);',
        "/refresh": "document.head.innerHTML += "
        + f'\'<meta http-equiv="refresh" content="0;url={live}/refresh">\';',
    }
    pages: dict[str, tuple[str, str | bytes]] = {
        path: ("text/html", f"<html><head></head><body><p>p</p><script>{script}</script></body></html>")
        for path, script in scripts.items()
    }
    pages["/links"] = ("text/html", '<body><a id="here" href="/open" target="_blank">here</a></body>')
    archive = write_archive(tmp_path / "a", pages)
    async with replay_server(archive) as base, launch_browser() as browser:
        context: Any = await browser.new_context(accept_downloads=True)  # type: ignore[attr-defined]
        tabs = await open_all(context, [f"{base}/replay/{STAMP}/{ARCHIVED}{p}" for p in scripts], 1500)
        assert len(context.pages) == len(tabs), "a replayed page opened a window"
        links = await context.new_page()
        await links.goto(f"{base}/replay/{STAMP}/{ARCHIVED}/links")
        await links.click("#here")  # an archived target=_blank link opens in the same tab
        await links.wait_for_url(f"**/replay/{STAMP}/{ARCHIVED}/open")
        await links.wait_for_timeout(300)
        assert len(context.pages) == len(tabs) + 1
    assert sum(site.hits.values()) == 0, dict(site.hits)


async def test_documents_served_as_archived_run_no_script(site: Site, tmp_path: Path) -> None:
    """`id_` bytes, SVG and XML are not rewritten: nothing in them may run or refresh."""
    live = site.url("")
    script = "<script>document.title = 'ran';</script>"
    refresh = f'<meta http-equiv="refresh" content="0;url={live}/refresh">'
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>document.title = "ran";</script></svg>'
    pages: dict[str, tuple[str, str | bytes]] = {
        "/page": ("text/html", f"<html><head><title>t</title>{refresh}</head><body>{script}</body></html>"),
        "/image.svg": ("image/svg+xml", svg),
        "/scripted": ("text/html", f"<html><head><title>t</title></head><body>{script}</body></html>"),
        "/sniffed": ("unknown/unknown", f"<html><head><title>s</title></head><body>{script}</body></html>"),
    }
    archive = write_archive(tmp_path / "a", pages)
    async with replay_server(archive) as base, launch_browser() as browser:
        context: Any = await browser.new_context()  # type: ignore[attr-defined]
        urls = [f"{base}/replay/{STAMP}id_/{ARCHIVED}/page"]
        urls += [f"{base}/replay/{STAMP}/{ARCHIVED}{path}" for path in ("/image.svg", "/sniffed")]
        tabs = await open_all(context, urls, 1000)
        titles = [await tab.title() for tab in tabs]
        assert titles[0] == "t" and "ran" not in titles, titles
        rewritten = await context.new_page()  # a page replayed with its links rewritten runs scripts
        await rewritten.goto(f"{base}/replay/{STAMP}/{ARCHIVED}/scripted")
        await rewritten.wait_for_function("document.title === 'ran'")
    assert sum(site.hits.values()) == 0, dict(site.hits)


class Listener(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.packets = 0

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.packets += 1


RTC = """
const ice = {{iceServers: [{{urls: 'stun:127.0.0.1:{udp}'}},
  {{urls: 'turn:127.0.0.1:{tcp}?transport=tcp', username: 'u', credential: 'c'}}]}};
function call(Peer) {{
  try {{ const pc = new Peer(ice); pc.createDataChannel('x');
         pc.createOffer().then(o => pc.setLocalDescription(o)).catch(() => 0); }} catch (e) {{}}
}}
"""


async def test_webrtc_sends_nothing_to_stun_or_turn_servers(site: Site, tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    udp = Listener()
    transport, _ = await loop.create_datagram_endpoint(lambda: udp, local_addr=("127.0.0.1", 0))
    connections: list[int] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        writer.close()

    turn = await asyncio.start_server(accept, "127.0.0.1", 0)
    rtc = RTC.format(udp=transport.get_extra_info("sockname")[1], tcp=turn.sockets[0].getsockname()[1])
    frame_script = f"<script>{rtc} call(RTCPeerConnection);</script>"
    scripts = {
        "/window": "call(window.RTCPeerConnection || window.webkitRTCPeerConnection);",
        "/blank-frame": "const f = document.createElement('iframe'); document.body.append(f);"
        " call(f.contentWindow.RTCPeerConnection);",
        "/srcdoc-frame": "const f = document.createElement('iframe');"
        f" f.srcdoc = {frame_script!r}; document.body.append(f);",
        "/data-frame": "const f = document.createElement('iframe');"
        f" f.src = 'data:text/html,' + encodeURIComponent({frame_script!r}); document.body.append(f);",
    }
    pages: dict[str, tuple[str, str | bytes]] = {
        path: ("text/html", f"<html><body><script>{rtc}{script}</script></body></html>")
        for path, script in scripts.items()
    }
    site.page("/control", pages["/window"][1])
    archive = write_archive(tmp_path / "a", pages)
    try:
        async with replay_server(archive) as base, launch_browser() as browser:
            context: Any = await browser.new_context()  # type: ignore[attr-defined]
            urls = [f"{base}/replay/{STAMP}/{ARCHIVED}{p}" for p in scripts]
            urls.append(f"{base}/replay/{STAMP}id_/{ARCHIVED}/window")
            await open_all(context, urls, 3000)
            assert (udp.packets, len(connections)) == (0, 0), "replayed WebRTC reached a live server"
            control = await context.new_page()
            await control.goto(site.url("/control"))
            for _ in range(50):
                if udp.packets and connections:
                    break
                await control.wait_for_timeout(100)
            assert udp.packets and connections, "the same script outside replay sends nothing: no test"
    finally:
        transport.close()
        turn.close()
        await turn.wait_closed()


FONTS = sorted(Path("/usr/share/fonts").rglob("*.ttf"))


async def test_other_origins_cannot_read_replay_but_replayed_fonts_load(site: Site, tmp_path: Path) -> None:
    if not FONTS:
        pytest.fail("no TrueType font under /usr/share/fonts (apt-get install fonts-dejavu-core)")
    styled = (
        "<html><head><style>@font-face { font-family: Archived; src: url(/font.ttf); }"
        " p { font-family: Archived; }</style></head><body><p>text</p></body></html>"
    )
    pages: dict[str, tuple[str, str | bytes]] = {
        "/secret": ("text/plain", "archived secret"),
        "/styled": ("text/html", styled),
        "/font.ttf": ("font/ttf", FONTS[0].read_bytes()),
    }
    archive = write_archive(tmp_path / "a", pages)
    async with replay_server(archive) as base, launch_browser() as browser:
        secret = f"{base}/replay/{STAMP}id_/{ARCHIVED}/secret"
        read = f"fetch('{secret}').then(r => r.text()).then(t => t, e => 'blocked')"
        site.page(  # a page elsewhere, and its sandboxed frame (Origin: null), try to read it
            "/attacker",
            "<html><head><title></title><script>addEventListener('message', e => {"
            " document.title = e.data; })</script></head><body><iframe sandbox='allow-scripts'"
            f' srcdoc="<script>{read}.then(t => parent.postMessage(t, `*`))</script>"></iframe>'
            "</body></html>",
        )
        context: Any = await browser.new_context()  # type: ignore[attr-defined]
        attacker = await context.new_page()
        await attacker.goto(site.url("/attacker"))
        assert await attacker.evaluate(read) == "blocked"
        await attacker.wait_for_function("document.title !== ''")
        assert await attacker.title() == "blocked"
        replayed = await context.new_page()
        await replayed.goto(f"{base}/replay/{STAMP}/{ARCHIVED}/styled")
        status = await replayed.evaluate(
            "document.fonts.ready.then(() => [...document.fonts].map(f => f.family + ' ' + f.status))"
        )
        assert status == ["Archived loaded"]
