"""The mirror's HTML, CSS and srcset rewriters on strings: only link spans change."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from archiver_plugins.markup.grammar import srcset_spans
from archiver_plugins.mirror.html import rewrite_css, rewrite_html
from archiver_plugins.mirror.mapping import Mapped

BASE = "http://h.test/dir/page.html"


class Links:
    """Maps every http URL under h.test to 'L:<path>', anything else is missing."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, raw: str, base: str, kind: str) -> Mapped:
        self.seen.append((raw, base, kind))
        if raw.startswith(("#", "mailto:", "data:", "javascript:")) or not raw:
            return Mapped(None)
        absolute = urljoin(base, raw)
        if absolute.startswith("http://h.test/"):
            return Mapped("L:" + absolute[len("http://h.test/") :])
        return Mapped(
            None if absolute == raw else absolute, missing=True, target=absolute, reason="not archived"
        )


def test_only_link_spans_change() -> None:
    page = (
        "<!DOCTYPE html>\n<HTML><Head><meta charset=utf-8><TITLE>a <b> title</TITLE>\n"
        "<!-- <a href='/in-comment'> --><script>var s = '<a href=\"/in-script\">';</script>\n"
        "<style>/* url(no.png) */ body { background: url( 'bg.png' ) }</style>\n"
        "</head><body BGCOLOR=white>\n"
        "<A HREF=/x  class=y>x</A> <a  href = 'y?a=1&amp;b=2#frag' >y</a>\n"
        "<textarea><a href='/in-textarea'></textarea><p>text &amp; more</p>\n"
        "</body></html>\n"
    )
    out = rewrite_html(page, BASE, Links())
    assert out == (
        "<!DOCTYPE html>\n<HTML><Head><meta charset=utf-8><TITLE>a <b> title</TITLE>\n"
        "<!-- <a href='/in-comment'> --><script>var s = '<a href=\"/in-script\">';</script>\n"
        "<style>/* url(no.png) */ body { background: url( 'L:dir/bg.png' ) }</style>\n"
        "</head><body BGCOLOR=white>\n"
        '<A HREF="L:x"  class=y>x</A> <a  href = "L:dir/y?a=1&amp;b=2#frag" >y</a>\n'
        "<textarea><a href='/in-textarea'></textarea><p>text &amp; more</p>\n"
        "</body></html>\n"
    )


def test_a_page_without_links_is_returned_unchanged() -> None:
    page = "<!doctype html><meta charset=utf-8><p>nothing <i>to</i> see</p><a href=#top>top</a>"
    assert rewrite_html(page, BASE, Links()) is page


def test_base_href_decides_resolution_and_is_disabled() -> None:
    page = (
        '<head><base href="http://h.test/other/" target="_blank"></head><a href="x">x</a><img src="/i.png">'
    )
    out = rewrite_html(page, BASE, Links())
    assert '<base data-archived-base-href="http://h.test/other/" target="_blank">' in out
    assert '<a href="L:other/x">' in out and '<img src="L:i.png">' in out


def test_every_url_attribute_kind() -> None:
    links = Links()
    page = (
        '<link rel="stylesheet" href="s.css" integrity="sha384-x" crossorigin>'
        '<link rel="canonical" href="/canon">'
        '<img src="a.png" srcset="a.png 1x, b,c.png 2x" lowsrc="low.png">'
        '<picture><source srcset="w.webp 100w, w2.webp 200w"></picture>'
        '<video poster="p.jpg" src="v.mp4"><track src="t.vtt"></video>'
        '<svg><image href="svg.png"/><use xlink:href="sprite.svg#i"/></svg>'
        '<table background="t.png"><td style="background:url(&quot;cell.png&quot;)">'
        '<form action="/search"><input type="image" src="go.png"></form>'
        '<iframe src="frame.html"></iframe><object data="o.swf"></object>'
        '<meta http-equiv="Refresh" content="5; URL=\'/next\'">'
    )
    out = rewrite_html(page, BASE, links)
    for expected in (
        '<link rel="stylesheet" href="L:dir/s.css"  >',
        '<link rel="canonical" href="L:canon">',
        'src="L:dir/a.png" srcset="L:dir/a.png 1x, L:dir/b,c.png 2x" lowsrc="L:dir/low.png"',
        'srcset="L:dir/w.webp 100w, L:dir/w2.webp 200w"',
        'poster="L:dir/p.jpg" src="L:dir/v.mp4"',
        '<track src="L:dir/t.vtt">',
        '<image href="L:dir/svg.png"/>',
        '<use xlink:href="L:dir/sprite.svg#i"/>',
        'background="L:dir/t.png"',
        'style="background:url(&quot;L:dir/cell.png&quot;)"',
        'action="L:search"',
        'src="L:dir/go.png"',
        '<iframe src="L:dir/frame.html">',
        'data="L:dir/o.swf"',
        "content=\"5; URL='L:next'\"",
    ):
        assert expected in out, expected
    kinds = {raw: kind for raw, _, kind in links.seen}
    assert kinds["s.css"] == "requisite" and kinds["/canon"] == "page"
    assert kinds["frame.html"] == "requisite"  # loaded with the page, as by browsers and wget -p


def test_missing_links_become_absolute_and_marked() -> None:
    page = (
        '<a href="http://elsewhere.test/p">e</a>'
        '<a href="//cdn.test/x" title="kept">c</a><img src="//cdn.test/i.png">'
    )
    out = rewrite_html(page, BASE, Links())
    assert (
        '<a href="http://elsewhere.test/p" data-archive-missing="not archived"'
        ' title="Not in the archive (not archived): http://elsewhere.test/p">e</a>'
    ) in out
    assert '<a href="http://cdn.test/x" title="kept" data-archive-missing="not archived">c</a>' in out
    assert '<img src="http://cdn.test/i.png">' in out  # made absolute, not marked
    unmarked = rewrite_html(page, BASE, Links(), mark_missing=False)
    assert "data-archive-missing" not in unmarked and 'href="http://cdn.test/x"' in unmarked


def test_charset_is_declared_after_head_when_missing() -> None:
    page = "<!doctype html><html><head><title>t</title></head><p>é</p>"
    assert rewrite_html(page, BASE, Links(), charset="windows-1252") == (
        '<!doctype html><html><head><meta charset="windows-1252"><title>t</title></head><p>é</p>'
    )
    declared = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
    assert rewrite_html(declared, BASE, Links(), charset="utf-8") is declared
    bare = "<!DOCTYPE html>\n<p>x</p>"
    assert (
        rewrite_html(bare, BASE, Links(), charset="utf-8")
        == '<!DOCTYPE html><meta charset="utf-8">\n<p>x</p>'
    )


@pytest.mark.parametrize(
    "broken",
    [
        "<a href='unterminated>text",
        "<a href=",
        "<!-- never closed <a href=x>",
        "<script>never closed <a href=x>",
        "<a href=x",
        "<",
        "<a\x00 href=x>",
        "<a href=x/>",
    ],
)
def test_broken_markup_never_raises(broken: str) -> None:
    out = rewrite_html(broken, BASE, Links())
    assert isinstance(out, str)


def test_css_rewriting() -> None:
    css = (
        "@import 'a.css';\n@import url(b.css) screen;\n"
        '.x { content: "url(not-a-link)"; background: url( "c d.png" ), URL(e\\2e png); }\n'
        "/* url(comment.png) */ .y { b: myurl(no); } .z { b: url(data:image/png;base64,xx) }\n"
        ".w { b: url() } .v { b: url(http://h.test/abs.png) }"
    )
    out = rewrite_css(css, "http://h.test/css/site.css", Links())
    assert out == (
        "@import 'L:css/a.css';\n@import url(\"L:css/b.css\") screen;\n"
        '.x { content: "url(not-a-link)"; background: url( "L:css/c d.png" ), URL("L:css/e.png"); }\n'
        "/* url(comment.png) */ .y { b: myurl(no); } .z { b: url(data:image/png;base64,xx) }\n"
        '.w { b: url() } .v { b: url("L:abs.png") }'
    )
    inline = rewrite_css("@import 'x.css'; background: url(y.png)", BASE, Links(), imports=False)
    assert inline == "@import 'x.css'; background: url(\"L:dir/y.png\")"


def test_srcset_parsing_follows_the_standard() -> None:
    value = " a.png 1x,b.png   2x , data:image/png;base64,AAA= 3x,c.png,, d.png (max-width: 1px) 4x"
    urls = [value[s:e] for s, e in srcset_spans(value)]
    assert urls == ["a.png", "b.png", "data:image/png;base64,AAA=", "c.png", "d.png"]
    out = rewrite_html('<img srcset="a.png 1x, b.png 2x">', BASE, Links())
    assert out == '<img srcset="L:dir/a.png 1x, L:dir/b.png 2x">'


@pytest.mark.parametrize(
    ("content", "expected"),
    [("0; url=/a", "0; url=L:a"), ("3;URL='b.html'", "3;URL='L:dir/b.html'"), ("10", "10"), ("", "")],
)
def test_meta_refresh_forms(content: str, expected: str) -> None:
    page = f'<meta http-equiv="refresh" content="{content}">'
    assert rewrite_html(page, BASE, Links()) == f'<meta http-equiv="refresh" content="{expected}">'
