"""Rewriting archived HTML and CSS for replay: every URL stays on the archive server."""

from __future__ import annotations

import pytest
from archiver_plugins.markup.grammar import srcset_urls
from archiver_plugins.replay.replay import UrlRewriter, rewrite_html
from archiver_plugins.web.searching import safe_snippet
from selectolax.lexbor import LexborHTMLParser

BASE = "http://site.test/dir/page.html"
TS = "20240102030405"


def rewriter(archived: set[str] | None = None) -> UrlRewriter:
    known = archived
    return UrlRewriter(BASE, TS, is_archived=None if known is None else known.__contains__)


def r(url: str, modifier: str = "") -> str:
    return f"/replay/{TS}{modifier}/{url}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("other.html", r("http://site.test/dir/other.html")),
        ("/root.css", r("http://site.test/root.css")),
        ("../up.png", r("http://site.test/up.png")),
        ("//cdn.test/lib.js", r("http://cdn.test/lib.js")),
        ("https://elsewhere.test/x?a=1&b=2", r("https://elsewhere.test/x?a=1&b=2")),
        ("  spaced.html\n", r("http://site.test/dir/spaced.html")),
        ("#section", "#section"),
        ("data:image/png;base64,AAAA", "data:image/png;base64,AAAA"),
        ("mailto:someone@site.test", "mailto:someone@site.test"),
        ("", ""),
        ("ftp://files.test/a", "/missing/20240102030405/ftp://files.test/a"),
    ],
)
def test_urls_resolve_into_the_archive(value: str, expected: str) -> None:
    assert rewriter().rewrite(value) == expected


def test_html_attributes_are_rewritten_and_reescaped() -> None:
    page = (
        "<!DOCTYPE html><html><head>"
        '<link rel="stylesheet" href="s.css" integrity="sha384-x" crossorigin>'
        "<style>@import 'a.css'; body { background: url(bg.png) }</style>"
        '<script src="app.js"></script>'
        '<meta http-equiv="refresh" content="3; url=next.html">'
        "</head><body class=main>"
        '<a href="kept.html" ping="http://tracker.test/">kept</a>'
        '<a href="lost.html">lost</a>'
        '<img src="a.png" srcset="a.png 1x, b.png 2x" style="border-image: url(\'e.png\')">'
        '<iframe src="frame.html"></iframe>'
        '<form action="/find"><input type="image" src="go.png"></form>'
        '<video poster="p.jpg"><source src="v.mp4"></video>'
        '<a href="x.html?a=1&amp;b=&quot;2&quot;">q</a>'
        "<p>a &lt; b &amp;&amp; c &#62; d<!-- note --></p>"
        "</body></html>"
    )
    out = rewrite_html(page, rewriter({"http://site.test/dir/kept.html"}), banner="<div id=b></div>")
    assert out.startswith("<!DOCTYPE html>")
    assert f'href="{r("http://site.test/dir/s.css")}"' in out and "integrity" not in out
    assert f"@import '{r('http://site.test/dir/a.css')}'" in out
    assert f'url("{r("http://site.test/dir/bg.png")}")' in out
    assert f'src="{r("http://site.test/dir/app.js")}"' in out
    assert f'content="3; url={r("http://site.test/dir/next.html")}"' in out
    assert "<body class=main><div id=b></div>" in out  # untouched markup stays as archived
    assert f'href="{r("http://site.test/dir/kept.html")}"' in out and "ping" not in out
    assert 'href="/missing/20240102030405/http://site.test/dir/lost.html"' in out
    assert f'srcset="{r("http://site.test/dir/a.png")} 1x, {r("http://site.test/dir/b.png")} 2x"' in out
    assert f"border-image: url('{r('http://site.test/dir/e.png')}')" in out
    assert f'src="{r("http://site.test/dir/frame.html", "if_")}"' in out
    assert f'action="{r("http://site.test/find")}"' in out
    assert f'src="{r("http://site.test/dir/go.png")}"' in out
    assert f'poster="{r("http://site.test/dir/p.jpg")}"' in out
    assert f'src="{r("http://site.test/dir/v.mp4")}"' in out
    assert 'href="/missing/20240102030405/http://site.test/dir/x.html?a=1&amp;b=&quot;2&quot;"' in out
    assert "<p>a &lt; b &amp;&amp; c &#62; d<!-- note --></p>" in out


def test_base_href_moves_resolution_and_is_rewritten_itself() -> None:
    out = rewrite_html('<base href="http://other.test/sub/"><img src="i.png">', rewriter())
    assert f'<base href="{r("http://other.test/sub/")}">' in out
    assert f'src="{r("http://other.test/sub/i.png")}"' in out


def test_attribute_values_cannot_break_out() -> None:
    out = rewrite_html("<a title='\"><script>alert(1)</script>' href='\"onmouseover=x'>t</a>", rewriter())
    tree = LexborHTMLParser(out)  # read as a browser reads it
    assert tree.css("script") == []
    (link,) = tree.css("a")
    assert link.attributes == {
        "title": '"><script>alert(1)</script>',
        "href": r('http://site.test/dir/"onmouseover=x'),
    }
    assert "/dir/&quot;onmouseover=x" in out


def test_banner_without_body_goes_last() -> None:
    assert rewrite_html("<p>fragment</p>", rewriter(), banner="<div>B</div>") == "<p>fragment</p><div>B</div>"


def test_css_urls_and_imports() -> None:
    css = (
        '@import url("print.css") print;\n@import "screen.css";\n'
        "a { background: url( 'i.png' ) } b { background: url(data:image/gif;base64,R0l) }"
        ' @font-face { src: url(f.woff2) format("woff2") }'
    )
    out = rewriter().rewrite_css(css)
    assert f'@import url("{r("http://site.test/dir/print.css")}") print;' in out
    assert f'@import "{r("http://site.test/dir/screen.css")}";' in out
    assert f"url( '{r('http://site.test/dir/i.png')}' )" in out  # only the URL changes
    assert "url(data:image/gif;base64,R0l)" in out or 'url("data:image/gif;base64,R0l")' in out
    assert f'url("{r("http://site.test/dir/f.woff2")}")' in out


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a.png, b.png 640w", ["a.png", "b.png"]),
        ("a.png,b.png 640w", ["a.png,b.png"]),  # no space: one URL, as browsers read it
        ("data:image/png;base64,AA== 1x, c.png 2x", ["data:image/png;base64,AA==", "c.png"]),
        ("  ,, d.png  ", ["d.png"]),
        ("", []),
    ],
)
def test_srcset_parsing(srcset: str, expected: list[str]) -> None:
    assert srcset_urls(srcset) == expected


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ('a <b class="match term0">word</b> b', 'a <b class="match term0">word</b> b'),
        ("&lt;script&gt; kept as text", "&lt;script&gt; kept as text"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<b class="match term1">open', '<b class="match term1">open</b>'),
        ('</b><b onclick="x">', "&lt;b onclick=&quot;x&quot;&gt;"),
    ],
)
def test_snippets_keep_only_highlight_marks(snippet: str, expected: str) -> None:
    assert str(safe_snippet(snippet)) == expected
