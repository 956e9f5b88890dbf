"""One link grammar: the crawl, the export and the replay read the same links in a document.

Each case is a shape the three once read differently.  The crawl's links (parser and
tokenizer fallback) are what is fetched; the export's link map and the replay's output say
what each rewriter points elsewhere, which is what is fetched plus the URLs that are
rewritten but never fetched (a form's action, a quotation's source, a preconnect origin).
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin

import pytest
from archiver_plugins import links
from archiver_plugins.links.collector import LinkCollector
from archiver_plugins.links.resolve import Resolver
from archiver_plugins.links.tokens import tokenized_links
from archiver_plugins.markup.grammar import css_references, refresh_url, srcset_urls
from archiver_plugins.mirror.html import rewrite_css as export_css
from archiver_plugins.mirror.html import rewrite_html as export_html
from archiver_plugins.mirror.mapping import Mapped
from archiver_plugins.replay.replay import UrlRewriter
from archiver_plugins.replay.replay import rewrite_html as replay_html

from archiver import LinkKind

PAGE = LinkKind.PAGE
REQUISITE = LinkKind.REQUISITE
IMPORT = LinkKind.IMPORT
BASE = "http://h.test/dir/page.html"
STAMP = "20240102030405"
_REPLAYED = re.compile(rf"/replay/{STAMP}(?:if_)?/(https?://[^\s\"'&)]+)")


def d(path: str) -> str:
    return urljoin(BASE, path)


def fetched(document: str) -> list[tuple[str, LinkKind]]:
    parsed = [(link.url, link.kind) for link in links.find_links(BASE, document, "html")]
    out = LinkCollector(Resolver(BASE))
    tokenized_links(document, out)
    assert [(link.url, link.kind) for link in out.links] == parsed  # the fallback reads the same
    return parsed


def exported(document: str) -> dict[str, str]:
    """URL -> kind, for every link the export's link map is asked about."""
    seen: dict[str, str] = {}

    def link_map(raw: str, base: str, kind: str) -> Mapped:
        seen.setdefault(urldefrag(urljoin(base, raw.strip()))[0], kind)
        return Mapped("L")

    export_html(document, BASE, link_map)
    return seen


def replayed(document: str) -> set[str]:
    out = replay_html(document, UrlRewriter(BASE, STAMP))
    out = re.sub(r"<base[^>]*>", "", out)  # the replay keeps <base> pointing into the archive: no link
    return {urldefrag(url)[0] for url in _REPLAYED.findall(out)}


CASES = [
    # a frame is loaded with its page (browsers, wget -p): a requisite everywhere
    ('<iframe src="f.html"></iframe>', [(d("f.html"), REQUISITE)], []),
    # imagesrcset was skipped by the replay
    (
        '<link rel="preload" as="image" imagesrcset="a.png 1x, b.png 2x">',
        [(d("a.png"), REQUISITE), (d("b.png"), REQUISITE)],
        [],
    ),
    # url() inside a CSS comment or string is no link; the replay rewrote it, the crawl took the string
    (
        '<style>/* url(c.png) */ .x { content: "url(s.png)" } .y { background: url(y.png) }</style>',
        [(d("y.png"), REQUISITE)],
        [],
    ),
    (
        "<p style='content: \"url(s.png)\"; background: url(&quot;b.png&quot;)'>",
        [(d("b.png"), REQUISITE)],
        [],
    ),
    # @import url() is an import (the export took it for an image)
    ("<style>@import url(i.css) screen;</style>", [(d("i.css"), IMPORT)], []),
    # CSS escapes are decoded (the crawl fetched them as written)
    ("<style>.e { background: url(e\\2e png) }</style>", [(d("e.png"), REQUISITE)], []),
    # SVG references were rewritten but never fetched
    (
        '<svg><image href="i.svg"/><use xlink:href="s.svg#icon"/>'
        '<a xlink:href="p.html"><text>p</text></a></svg>',
        [(d("i.svg"), REQUISITE), (d("s.svg"), REQUISITE), (d("p.html"), PAGE)],
        [],
    ),
    # plugin content: object, embed, param
    (
        '<object data="o.swf"><param name="movie" value="m.swf"><embed src="e.swf"></object>',
        [(d("o.swf"), REQUISITE), (d("m.swf"), REQUISITE), (d("e.swf"), REQUISITE)],
        [],
    ),
    # background is an image only on the elements HTML gives it to
    ('<table><tr><td background="t.png">x</td></tr></table>', [(d("t.png"), REQUISITE)], []),
    ('<div background="no.png">x</div>', [], []),
    # rewritten so that nothing leads out, never fetched
    (
        '<form action="/search"><button formaction="/other">go</button></form>',
        [],
        [d("/search"), d("/other")],
    ),
    (
        '<blockquote cite="/source">q</blockquote><img src="i.png" longdesc="/long">',
        [(d("i.png"), REQUISITE)],
        [d("/source"), d("/long")],
    ),
    ('<link rel="preconnect" href="https://cdn.test/">', [], ["https://cdn.test/"]),
    # a prefetched document is a page of its own, not a requisite (the export said requisite)
    ('<link rel="prefetch" href="next.html">', [(d("next.html"), PAGE)], []),
    # the first <base href> decides; one that is not http(s) leaves the document's URL
    # (the replay took the next one)
    (
        '<base href="javascript:void(0)"><base href="http://other.test/"><a href="a.html">a</a>',
        [(d("a.html"), PAGE)],
        [],
    ),
    # a refresh needs its delay, as browsers read it
    ('<meta http-equiv="refresh" content="0; url=/moved">', [(d("/moved"), PAGE)], []),
    ('<meta http-equiv="refresh" content="url=/not-a-refresh">', [], []),
    # srcset URLs keep their commas, as the HTML standard splits them
    ('<img srcset="a,1.png 1x, b.png 2x">', [(d("a,1.png"), REQUISITE), (d("b.png"), REQUISITE)], []),
]


@pytest.mark.parametrize(("snippet", "fetch", "rewritten_only"), CASES)
def test_the_crawl_the_export_and_the_replay_read_the_same_links(
    snippet: str, fetch: list[tuple[str, LinkKind]], rewritten_only: list[str]
) -> None:
    document = f"<!doctype html><html><head></head><body>{snippet}</body></html>"
    assert fetched(document) == fetch
    rewritten = {url for url, _ in fetch} | set(rewritten_only)
    export = exported(document)
    assert set(export) == rewritten
    assert {url: export[url] for url, _ in fetch} == dict(fetch)  # the export's map gets the crawl's kinds
    assert replayed(document) == rewritten


def test_the_replay_shows_a_frame_as_a_frame() -> None:
    out = replay_html('<iframe src="f.html"></iframe><img src="i.png">', UrlRewriter(BASE, STAMP))
    assert f'src="/replay/{STAMP}if_/{d("f.html")}"' in out
    assert f'src="/replay/{STAMP}/{d("i.png")}"' in out


def test_css_comments_and_strings_stay_byte_for_byte_in_both_rewriters() -> None:
    css = '/* url(c.png) */ .x { content: "url(s.png)" } .y { background: url( y.png ) }'
    exported_css = export_css(css, BASE, lambda raw, base, kind: Mapped("L"))
    replayed_css = UrlRewriter(BASE, STAMP).rewrite_css(css)
    assert exported_css == css.replace("url( y.png )", 'url( "L" )')
    assert replayed_css == css.replace("url( y.png )", f'url( "/replay/{STAMP}/{d("y.png")}" )')


def test_a_stylesheet_gives_the_same_references_to_all_three() -> None:
    css = (
        "@import 'a.css'; @import url(b.css); /* @import 'no.css'; */\n"
        '.x { background: url("c.png"), URL(d\\2e png); content: "url(no.png)" } .z { b: myurl(no.png) }'
    )
    found = [(link.url, link.kind) for link in links.find_links(BASE, css, "css")]
    assert found == [
        (d("a.css"), IMPORT),
        (d("b.css"), IMPORT),
        (d("c.png"), REQUISITE),
        (d("d.png"), REQUISITE),
    ]
    seen: list[tuple[str, str]] = []

    def link_map(raw: str, base: str, kind: str) -> Mapped:
        seen.append((urljoin(base, raw), kind))
        return Mapped(None)

    export_css(css, BASE, link_map)
    assert seen == found
    assert sorted(_REPLAYED.findall(UrlRewriter(BASE, STAMP).rewrite_css(css))) == sorted(
        url for url, _ in found
    )


@pytest.mark.parametrize(
    ("css", "urls"),
    [
        ("a { b: url(x.png) }", ["x.png"]),
        ("a { b: url(  'x y.png'  ) }", ["x y.png"]),
        ('a { b: url("x\\"y.png") }', ['x"y.png']),
        ("a { b: url(x y.png) }", []),  # a bad URL: a space inside an unquoted one
        ("a { b: url(x'y.png) } c { d: url(z.png) }", ["z.png"]),  # a bad URL runs to its ')'
        ('a { b: "unterminated\n; c: url(z.png) }', ["z.png"]),  # a newline ends a string
        ("a { b: url(x.png", ["x.png"]),  # the end of the text closes it
        ("a { b: -url(x.png) myurl(y.png) }", []),  # other functions
        ("/* unterminated url(x.png)", []),
        ("@import 'x.css'", ["x.css"]),
        ("@import\n  url(x.css);", ["x.css"]),
        ("@importx 'no.css'", []),
    ],
)
def test_css_is_tokenized_as_the_css_syntax_standard_says(css: str, urls: list[str]) -> None:
    assert [url for _, _, url, _, _ in css_references(css)] == urls


def test_the_grammar_s_parsers_read_srcset_and_refresh_as_browsers_do() -> None:
    assert srcset_urls("a.png 1x,b.png 2x") == ["a.png", "b.png"]
    assert srcset_urls("x.png (a, b) 2x, y.png") == ["x.png", "y.png"]
    assert refresh_url("3.5 , URL = 'a b.html' trailing") == "a b.html"
    assert refresh_url(".5;/dot") == "/dot"
    assert refresh_url("; url=/no-delay") is None
