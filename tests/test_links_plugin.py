"""The bundled link plugin: what it finds, how it resolves, and how it survives hostile pages."""

from __future__ import annotations

import functools
import random
import zlib
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import pytest
from archiver_plugins import links
from archiver_plugins.links.collector import LinkCollector
from archiver_plugins.links.nesting import exceeds_budget
from archiver_plugins.links.resolve import Resolver, remove_dot_segments
from archiver_plugins.links.tokens import tokenized_links
from archiver_plugins.markup.grammar import refresh_url, srcset_urls

from archiver import ConfigError, Crawl, Link, LinkKind, Page, testing
from archiver.config import Config, load_config
from archiver.manager import make_plugin_manager

PAGE = LinkKind.PAGE
REQUISITE = LinkKind.REQUISITE
IMPORT = LinkKind.IMPORT
BASE = "http://example.org/dir/page.html"


def make_page(
    body: str | bytes,
    *,
    url: str = BASE,
    content_type: str | None = "text/html; charset=utf-8",
    encoding: str = "utf-8",
) -> Page:
    content = body.encode(encoding) if isinstance(body, str) else body
    headers = (("Content-Type", content_type),) if content_type is not None else ()
    return Page(url=url, status=200, headers=headers, content=content, encoding=encoding)


make_crawl = functools.partial(testing.make_crawl, BASE)


def extract(body: str | bytes, crawl: Crawl | None = None, **page: Any) -> list[Link]:
    found = links.extract_links(page=make_page(body, **page), crawl=crawl or make_crawl())
    return list(found or [])


def pairs(found: list[Link]) -> list[tuple[str, LinkKind]]:
    return [(link.url, link.kind) for link in found]


# -- what each element contributes -------------------------------------------------------

ELEMENT_CASES = [
    ('<a href="a.html">x</a>', [("http://example.org/dir/a.html", PAGE)]),
    ('<map><area href="/area" shape="rect"></map>', [("http://example.org/area", PAGE)]),
    ('<iframe src="frame.html"></iframe>', [("http://example.org/dir/frame.html", REQUISITE)]),
    ('<frameset><frame src="f.html"></frameset>', [("http://example.org/dir/f.html", REQUISITE)]),
    ('<meta http-equiv="Refresh" content="3; url=/next">', [("http://example.org/next", PAGE)]),
    ('<link rel="alternate" href="/feed.xml">', [("http://example.org/feed.xml", PAGE)]),
    ('<link rel="next" href="?page=2">', [("http://example.org/dir/page.html?page=2", PAGE)]),
    ('<link rel="prev" href="1.html">', [("http://example.org/dir/1.html", PAGE)]),
    ('<link rel="stylesheet" href="s.css">', [("http://example.org/dir/s.css", REQUISITE)]),
    ('<link rel="alternate stylesheet" href="t.css">', [("http://example.org/dir/t.css", REQUISITE)]),
    ('<link rel="shortcut icon" href="/favicon.ico">', [("http://example.org/favicon.ico", REQUISITE)]),
    ('<link rel="preload" as="font" href="/f.woff2">', [("http://example.org/f.woff2", REQUISITE)]),
    ('<link rel="modulepreload" href="/m.js">', [("http://example.org/m.js", REQUISITE)]),
    ('<link rel="manifest" href="/app.webmanifest">', [("http://example.org/app.webmanifest", REQUISITE)]),
    ('<link rel="preconnect" href="https://cdn.example.net">', []),
    ('<link rel="dns-prefetch" href="//cdn.example.net">', []),
    ('<img src="i.png">', [("http://example.org/dir/i.png", REQUISITE)]),
    (
        '<img src="a.png" srcset="a.png 1x, b.png 2x">',
        [("http://example.org/dir/a.png", REQUISITE), ("http://example.org/dir/b.png", REQUISITE)],
    ),
    (
        '<picture><source srcset="/w.webp" type="image/webp"><img src="/j.jpg"></picture>',
        [("http://example.org/w.webp", REQUISITE), ("http://example.org/j.jpg", REQUISITE)],
    ),
    ('<script src="/app.js"></script>', [("http://example.org/app.js", REQUISITE)]),
    (
        '<video src="v.mp4" poster="p.jpg"><track src="t.vtt"></video>',
        [
            ("http://example.org/dir/v.mp4", REQUISITE),
            ("http://example.org/dir/p.jpg", REQUISITE),
            ("http://example.org/dir/t.vtt", REQUISITE),
        ],
    ),
    ('<audio src="/s.ogg"></audio>', [("http://example.org/s.ogg", REQUISITE)]),
    ('<object data="movie.swf"></object>', [("http://example.org/dir/movie.swf", REQUISITE)]),
    ('<embed src="/e.svg">', [("http://example.org/e.svg", REQUISITE)]),
    ('<input type="image" src="/go.png">', [("http://example.org/go.png", REQUISITE)]),
    ('<body background="/bg.gif"></body>', [("http://example.org/bg.gif", REQUISITE)]),
    ("<div style=\"background: url('/s.png')\"></div>", [("http://example.org/s.png", REQUISITE)]),
    (
        "<style>@import 'print.css'; h1 { background: url(\"/h.png\") }</style>",
        [("http://example.org/dir/print.css", IMPORT), ("http://example.org/h.png", REQUISITE)],
    ),
]


@pytest.mark.parametrize(("snippet", "expected"), ELEMENT_CASES)
def test_each_element_gives_its_links_with_their_kind(
    snippet: str, expected: list[tuple[str, LinkKind]]
) -> None:
    assert pairs(extract(f"<!doctype html>{snippet}")) == expected


@pytest.mark.parametrize(("snippet", "expected"), ELEMENT_CASES)
def test_the_tokenizer_fallback_reads_elements_the_same_way(
    snippet: str, expected: list[tuple[str, LinkKind]]
) -> None:
    out = LinkCollector(Resolver(BASE))
    tokenized_links(f"<!doctype html>{snippet}", out)
    assert pairs(out.links) == expected


RICH_DOCUMENT = """<!doctype html>
<html><head><base href="http://example.org/base/">
<link rel=stylesheet href=main.css><script src="/js/app.js"></script>
<style>/* url(commented.png) */ @import url("imported.css") screen; .x{background:url(x.png)}</style>
<meta http-equiv=refresh content="0;URL='/moved'"></head>
<body><!-- <a href="in-comment.html"> -->
<a href='one.html?a=1&amp;b=2'>one</a> <A HREF="TWO.html">two</A>
<script>var s = '<a href="in-script.html">';</script>
<img src=pic.png srcset="pic-2x.png 2x, pic-3x.png 3x" style="border-image: url(border.png)">
<a href="#top">top</a><a href="">self</a><a href="one.html#again">again</a>
<textarea><a href="in-textarea.html"></textarea>
<video poster="poster.jpg"><source src="movie.webm"></video>
</body></html>"""


def test_the_tokenizer_fallback_agrees_with_the_parser_on_a_rich_document() -> None:
    parsed = links.find_links(BASE, RICH_DOCUMENT, "html")
    out = LinkCollector(Resolver(BASE))
    tokenized_links(RICH_DOCUMENT, out)
    assert pairs(out.links) == pairs(parsed)
    urls = [link.url for link in parsed]
    assert "http://example.org/base/one.html?a=1&b=2" in urls
    assert "http://example.org/base/TWO.html" in urls
    assert "http://example.org/moved" in urls
    assert not any("comment" in url or "in-script" in url or "textarea" in url for url in urls)


# -- base, schemes, whitespace, broken URLs ------------------------------------------------


def test_base_href_applies_to_every_relative_link() -> None:
    found = extract('<head><base href="/other/"></head><a href="x.html">x</a><img src="../i.png">')
    assert pairs(found) == [
        ("http://example.org/other/x.html", PAGE),
        ("http://example.org/i.png", REQUISITE),
    ]


@pytest.mark.parametrize("base", ["javascript:alert(1)", "http://[::1", "#frag", "/" + "b" * 5000 + "/"])
def test_an_unusable_base_is_ignored(base: str) -> None:
    found = extract(f'<base href="{base}"><a href="x.html">x</a>')
    assert [link.url for link in found] == ["http://example.org/dir/x.html"]


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "  JaVaScRiPt:alert(1)",
        "java\nscript:alert(1)",
        "mailto:someone@example.org",
        "tel:+123",
        "data:text/html,<b>x</b>",
        "ftp://example.org/file",
        "file:///etc/passwd",
        "about:blank",
        "#fragment",
        "",
        "   ",
        "http://[::1",
        "http://exa mple.org/",
        "https:///no-host",
    ],
)
def test_links_a_crawler_cannot_fetch_are_skipped(href: str) -> None:
    assert extract(f'<a href="{href}">x</a>') == []


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("  /padded  ", "http://example.org/padded"),
        ("\t/ta\tbbed\n", "http://example.org/tabbed"),
        ("HTTPS://Example.org/Case", "HTTPS://Example.org/Case"),
        ("//cdn.example.net/lib.js", "http://cdn.example.net/lib.js"),
        ("http://[::1]:8080/v6", "http://[::1]:8080/v6"),
        ("http://user:pw@example.org:81/x", "http://user:pw@example.org:81/x"),
        ("../../../../up", "http://example.org/up"),
        ("./here/./there/../x", "http://example.org/dir/here/x"),
        ("a.html#frag", "http://example.org/dir/a.html"),
        ("?q=1#f", "http://example.org/dir/page.html?q=1"),
        ("\\\\evil.example\\path", "http://evil.example/path"),
        ("/caf\u00e9 menu.html", "http://example.org/caf\u00e9 menu.html"),
        ("http:relative", "http://example.org/dir/relative"),
    ],
)
def test_references_are_cleaned_and_made_absolute(href: str, expected: str) -> None:
    assert [link.url for link in extract(f'<a href="{href}">x</a>')] == [expected]


def test_duplicates_are_returned_once_per_kind_in_document_order() -> None:
    found = extract('<a href="/b">1</a><a href="/a">2</a><a href="/b#x">3</a><img src="/b">')
    assert pairs(found) == [
        ("http://example.org/b", PAGE),
        ("http://example.org/a", PAGE),
        ("http://example.org/b", REQUISITE),
    ]


def _random_reference(rng: random.Random) -> str:
    pieces = ["a", "b.html", ".", "..", "c%20d", "e;p=1", "%2e%2e", "g:h", "x.y"]
    path = "/".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
    prefix = rng.choice(["", "", "/", "//host.example/", "./", "../", "http://other.example/"])
    query = rng.choice(["", "", "?q=1", "?", "?a=./b&c=../d"])
    fragment = rng.choice(["", "", "#f", "#"])
    return prefix + path + query + fragment


@pytest.mark.parametrize(
    "base",
    [
        "http://example.org/dir/page.html",
        "http://example.org",
        "https://example.org:8443/a/b/c/?x=1",
        "http://example.org/a/b;p?q#f",
        "http://[::1]:8080/deep/er/",
    ],
)
def test_the_fast_resolver_agrees_with_urljoin(base: str) -> None:
    resolver = Resolver(base)
    rng = random.Random(base)
    for _ in range(3000):
        reference = _random_reference(rng)
        got = resolver.resolve(reference)
        expected = urljoin(base, reference).partition("#")[0]
        if urlsplit(expected).scheme not in ("http", "https") or not reference.split("#")[0]:
            assert got is None or got == expected, reference
            continue
        if reference.startswith(("g:h", "#", "?#")) or reference == "?":
            continue  # a bare "?" is an empty query (RFC 3986); urljoin keeps the base's
        parts = urlsplit(expected)
        if not parts.path:  # browsers give an http(s) URL at least the path "/"
            expected = urlunsplit(parts._replace(path="/"))
        # An empty query stays, as browsers keep it; urljoin drops it.
        assert got in (expected, expected + "?"), (base, reference)


def test_empty_path_segments_are_kept_as_the_url_standards_say() -> None:
    # urljoin drops the empty segment ('/dir/a/c'); RFC 3986 and browsers keep it.
    assert Resolver(BASE).resolve("a//b/../c") == "http://example.org/dir/a//c"
    assert Resolver(BASE + "?q").resolve("?") == BASE + "?"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/a/b/c/./../../g", "/a/g"),
        ("/mid/content=5/../6", "/mid/6"),
        ("/..", "/"),
        ("/a/..", "/"),
        ("/a/.", "/a/"),
        ("/a//../b", "/a/b"),
        ("/plain", "/plain"),
    ],
)
def test_dot_segments_are_removed_as_rfc_3986_says(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


# -- attribute micro-syntaxes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.png", ["a.png"]),
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a.png 100w,b.png 200w", ["a.png", "b.png"]),
        ("img,1.png 1x, img,2.png 2x", ["img,1.png", "img,2.png"]),
        ("a.png,b.png", ["a.png,b.png"]),
        ("a.png, b.png", ["a.png", "b.png"]),
        ("  , a.png (w 1, h 2), b.png", ["a.png", "b.png"]),
        ("data:image/png;base64,AAAA 1x, c.png 2x", ["data:image/png;base64,AAAA", "c.png"]),
        ("", []),
    ],
)
def test_srcset_is_split_as_the_html_standard_does(srcset: str, expected: list[str]) -> None:
    assert srcset_urls(srcset) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5; url=/next", "/next"),
        ("0;URL='/quoted'", "/quoted"),
        ('1, url="/double"', "/double"),
        ("0; /bare", "/bare"),
        ("  3  ;  URL = /spaced ", "/spaced"),
        ("5", None),
        ("", None),
    ],
)
def test_meta_refresh_content_is_read_like_a_browser(content: str, expected: str | None) -> None:
    assert refresh_url(content) == expected


# -- CSS, XML, XHTML, content types, charsets ------------------------------------------------


def test_a_stylesheet_gives_requisites_and_imports() -> None:
    css = """
    @charset "utf-8";
    @import "base.css";
    @import url(print.css) print;
    /* @import "commented.css"; url(commented.png) */
    body { background: url( "../img/bg.png" ) }
    @font-face { src: url(font.woff2) format("woff2"), url('data:font/woff;base64,AAAA') }
    .i { background-image: URL(icon.svg#frag) }
    """
    found = extract(css, url="http://example.org/css/site.css", content_type="text/css")
    assert pairs(found) == [
        ("http://example.org/css/base.css", IMPORT),
        ("http://example.org/css/print.css", IMPORT),
        ("http://example.org/img/bg.png", REQUISITE),
        ("http://example.org/css/font.woff2", REQUISITE),
        ("http://example.org/css/icon.svg", REQUISITE),
    ]


def test_an_rss_feed_gives_its_links() -> None:
    rss = """<?xml version="1.0"?>
    <?xml-stylesheet type="text/xsl" href="/feed.xsl"?>
    <rss version="2.0"><channel><link>http://example.org/</link>
    <item><link>http://example.org/post/1</link>
    <enclosure url="http://example.org/ep1.mp3" type="audio/mpeg"/></item></channel></rss>"""
    found = extract(rss, url="http://example.org/feed.xml", content_type="application/rss+xml")
    assert pairs(found) == [
        ("http://example.org/feed.xsl", REQUISITE),
        ("http://example.org/", PAGE),
        ("http://example.org/post/1", PAGE),
        ("http://example.org/ep1.mp3", PAGE),
    ]


def test_xml_links_are_found_without_expanding_entities() -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
        + ']><feed xmlns="http://www.w3.org/2005/Atom"><title>&lol9;</title>'
        '<link href="/a?x=1&amp;y=2"/><entry><link rel="alternate" href=\'/b\'/></entry></feed>'
    )
    found = extract(bomb, url="http://example.org/atom", content_type="application/atom+xml")
    assert [link.url for link in found] == ["http://example.org/a?x=1&y=2", "http://example.org/b"]


def test_xhtml_is_read_as_html() -> None:
    xhtml = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        '<head><link rel="stylesheet" href="s.css"/></head><body><a href="x.html">x</a></body></html>'
    )
    found = extract(xhtml, content_type="application/xhtml+xml")
    assert pairs(found) == [
        ("http://example.org/dir/s.css", REQUISITE),
        ("http://example.org/dir/x.html", PAGE),
    ]


@pytest.mark.parametrize("content_type", ["image/png", "application/pdf", "text/plain", "application/json"])
def test_other_content_types_are_left_alone(content_type: str) -> None:
    assert (
        links.extract_links(
            page=make_page('<a href="/x">x</a>', content_type=content_type), crawl=make_crawl()
        )
        is None
    )


def test_a_page_without_content_type_is_sniffed() -> None:
    assert [link.url for link in extract('<!DOCTYPE html><a href="/x">', content_type=None)] == [
        "http://example.org/x"
    ]
    assert extract('{"href": "/x"}', content_type=None) == []


def test_the_page_charset_is_used_not_the_bytes() -> None:
    body = '<meta charset="windows-1251"><a href="/\u043a\u043d\u0438\u0433\u0430">\u043a</a>'
    found = extract(body.encode("cp1251"), content_type="text/html", encoding="cp1251")
    assert [link.url for link in found] == ["http://example.org/\u043a\u043d\u0438\u0433\u0430"]


def test_links_are_extracted_from_error_pages_too() -> None:
    page = Page(
        url=BASE,
        status=404,
        headers=(("Content-Type", "text/html"),),
        content=b'<a href="/home">home</a>',
        encoding="utf-8",
    )
    assert [link.url for link in links.extract_links(page=page, crawl=make_crawl()) or []] == [
        "http://example.org/home"
    ]


# -- hostile pages: bounded, no crash ------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_page_with_100k_links_is_capped_at_max_links_per_page() -> None:
    crawl = make_crawl(max_links_per_page=1000)
    body = "<html><body>" + "".join(f'<a href="/p/{i}">{i}</a>' for i in range(100_000))
    found = extract(body, crawl)
    assert len(found) == 1000
    assert found[-1].url == "http://example.org/p/999"
    assert crawl.stats["links.capped"] == 1


@pytest.mark.timeout(30)
def test_100k_nested_divs_are_read_by_the_tokenizer_instead_of_the_parser() -> None:
    crawl = make_crawl()
    body = "<div>" * 100_000 + '<a href="/deep">x</a>' + "</div>" * 100_000
    assert [link.url for link in extract(body, crawl)] == ["http://example.org/deep"]
    assert crawl.stats["links.nesting_fallback"] == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "body",
    [
        "<span>" * 30_000 + "</div>" * 30_000,
        "<span></q>" * 30_000,
        "<ul><li>" * 20_000,
        "<b>" * 30_000 + "</p>" * 30_000,
    ],
    ids=["unmatched-end-tags", "interleaved-unmatched", "nested-lists", "formatting-then-p"],
)
def test_other_quadratic_shapes_are_detected(body: str) -> None:
    assert exceeds_budget(body)
    crawl = make_crawl()
    assert [link.url for link in extract(body + '<a href="/after">', crawl)] == ["http://example.org/after"]


def test_ordinary_pages_are_given_to_the_parser() -> None:
    flat = "<table>" + "<tr><td><a href='/x'>x</a><td>y" * 20_000 + "</table>"
    nested = "<div>" * 200 + "<p>text" * 5_000 + "</div>" * 200
    assert not exceeds_budget(flat)
    assert not exceeds_budget(nested)


@pytest.mark.timeout(30)
def test_a_100_kb_url_is_returned_intact() -> None:
    long_path = "/" + "a" * 100_000
    found = extract(f'<a href="{long_path}">x</a><a href="/short">y</a>')
    assert [link.url for link in found] == ["http://example.org" + long_path, "http://example.org/short"]


@pytest.mark.timeout(30)
def test_binary_served_as_html_does_not_crash() -> None:
    rng = random.Random(1)
    noise = bytes(rng.getrandbits(8) for _ in range(300_000))
    extract(noise + b'<a href="/after-noise">x</a>' + zlib.compress(noise))
    extract(b"\x00" * 100_000 + b'<a href="/nul">x</a>')


def test_an_unclosed_comment_hides_the_rest_of_the_page_as_in_a_browser() -> None:
    body = '<a href="/before">a</a><!-- never closed <a href="/after">b</a>'
    assert [link.url for link in extract(body)] == ["http://example.org/before"]
    out = LinkCollector(Resolver(BASE))
    tokenized_links(body, out)
    assert [link.url for link in out.links] == ["http://example.org/before"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "body",
    [
        '<a href="' * 50_000,
        "<a " + "'" * 50_001,
        "<script>" * 50_000,
        '<img srcset="' + "x 1x, " * 50_000 + '">',
        "<style>" + 'url("' * 50_000 + "</style>",
        "<!--" * 50_000,
        "<" * 200_000,
    ],
    ids=["unterminated-attributes", "quotes", "scripts", "huge-srcset", "css-strings", "comments", "lt"],
)
def test_malformed_markup_is_bounded(body: str) -> None:
    extract(body)
    out = LinkCollector(Resolver(BASE))
    tokenized_links(body, out)


@pytest.mark.timeout(30)
def test_malformed_css_is_bounded() -> None:
    css = "a{background:url(" * 50_000 + '@import "' * 50_000 + "/*" * 50_000
    extract(css, content_type="text/css", url="http://example.org/s.css")


def test_only_max_parse_size_characters_are_read() -> None:
    crawl = make_crawl(plugins={"links": {"max_parse_size": 1000}})
    body = '<a href="/early">e</a>' + " " * 2000 + '<a href="/late">l</a>'
    assert [link.url for link in extract(body, crawl)] == ["http://example.org/early"]
    assert crawl.stats["links.truncated"] == 1


# -- configuration and registration ------------------------------------------------------------


def test_configure_rejects_unknown_keys_with_a_suggestion() -> None:
    config = load_config(None, {"plugins": {"links": {"max_parse_sise": 10}}})
    with pytest.raises(ConfigError, match=r"max_parse_sise.*did you mean 'max_parse_size'"):
        links.configure(config=config)


@pytest.mark.parametrize("value", [0, -1, "big", True, 1.5])
def test_configure_rejects_impossible_sizes(value: object) -> None:
    config = load_config(None, {"plugins": {"links": {"max_parse_size": value}}})
    with pytest.raises(ConfigError, match=r"\[plugins\.links\] max_parse_size: "):
        links.configure(config=config)


def test_the_plugin_answers_through_the_plugin_manager() -> None:
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links"])
    pm.hook.configure(config=Config(), pm=pm)
    results = pm.hook.extract_links(page=make_page('<a href="/x">x</a>'), crawl=make_crawl())
    assert results == [[Link("http://example.org/x", PAGE)]]


# -- end to end ----------------------------------------------------------------------------


async def test_a_crawl_follows_pages_and_fetches_requisites_from_other_hosts(
    site: Any, other_site: Any, crawl_archive: Any
) -> None:
    site.page(
        "/",
        '<!doctype html><link rel="stylesheet" href="/s.css">'
        f'<img src="{other_site.url("/foreign.png")}">'
        f'<a href="/next.html">next</a><a href="{other_site.url("/foreign.html")}">away</a>',
    )
    site.page("/s.css", "@import 'more.css'; body{background:url(bg.png)}", content_type="text/css")
    site.page("/more.css", "p{background:url(/p.png)}", content_type="text/css")
    site.page("/bg.png", b"png", content_type="image/png")
    site.page("/p.png", b"png", content_type="image/png")
    site.page("/next.html", "<p>end</p>")
    other_site.page("/foreign.png", b"png", content_type="image/png")
    other_site.page("/foreign.html", "<p>not followed</p>")
    await crawl_archive(site.url("/"))
    assert {path for path, hits in site.hits.items() if hits} == {
        "/",
        "/s.css",
        "/more.css",
        "/bg.png",
        "/p.png",
        "/next.html",
    }
    assert other_site.hits["/foreign.png"] == 1
    assert other_site.hits["/foreign.html"] == 0


COMMENT_TRICKS = [
    '<!--><a href="after-empty-comment.html">x</a>-->',
    '<!---><a href="after-dash-comment.html">x</a>-->',
    '<!-- x --!><a href="after-bang-end.html">x</a>-->',
    '<!-- <a href="hidden.html"> --!-><a href="still-hidden.html"> --><a href="shown.html">',
    '<!--><meta http-equiv="refresh" content="1;url=/refreshed">-->',
    '<!-- a -- b --><a href="dashes-inside.html">x</a>',
    '<!--a--!><img src="pic.png"><!-- <a href="closed-late.html"> --!><a href="after.html">',
    '<svg><style><a href="in-svg-style.html"></a></style></svg><a href="after-svg.html">x</a>',
    '<! <a href="in-bogus-comment.html"> <? <a href="in-processing.html"> <a href="after-bogus.html">',
    '</p title="<a href=in-end-tag.html>"><a href="after-end-tag.html">',
    '<p data=x"><a href="after-unquoted.html">"</p><iframe><a href="in-iframe.html"></iframe>',
    '<noscript><a href="in-noscript.html"></noscript><plaintext><a href="in-plaintext.html">',
]


@pytest.mark.parametrize("snippet", COMMENT_TRICKS)
def test_the_tokenizer_fallback_reads_comments_as_a_browser_does(snippet: str) -> None:
    from archiver_plugins.links.html import parsed_links

    document = f"<!doctype html><body>{snippet}<a href='/last.html'>last</a></body>"
    browser = LinkCollector(Resolver(BASE))
    parsed_links(document, browser)  # lexbor, the HTML standard's tokenizer and tree builder
    out = LinkCollector(Resolver(BASE))
    tokenized_links(document, out)
    assert pairs(out.links) == pairs(browser.links)
    assert browser.links  # the comparison is not between two empty lists
