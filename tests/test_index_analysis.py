"""Index plugin: the CJK bigram analyzer, text extraction and charset handling."""

from __future__ import annotations

from archiver_plugins.index.schema import site_terms, text_analyzer
from archiver_plugins.markup.text import extract, is_indexable, sniff_encoding


def tokens(text: str) -> list[str]:
    return [t.text for t in text_analyzer()(text)]


def test_cjk_runs_become_bigrams_and_latin_words_are_stemmed() -> None:
    assert tokens("全文搜索 queues") == ["全文", "文搜", "搜索", "queue"]
    assert tokens("Python编程") == ["python", "编程"]
    assert tokens("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokens("中") == ["中"]


def test_cjk_bigram_positions_stay_in_order() -> None:
    positions = [(t.text, t.pos) for t in text_analyzer()("hello 中文搜索 world", positions=True)]
    assert positions == [("hello", 0), ("中文", 1), ("文搜", 2), ("搜索", 3), ("world", 4)]


def test_cjk_bigram_chars_point_into_the_text() -> None:
    text = "abc 中文搜索"
    found = [(t.text, t.startchar, t.endchar) for t in text_analyzer()(text, chars=True)]
    for word, start, end in found[1:]:
        assert text[start:end] == word


def test_extraction_keeps_main_text_and_drops_boilerplate() -> None:
    html = b"""<html><head><title> The  Title </title>
    <meta name="description" content="About queues"><script>var secret = 1;</script>
    <style>.x{}</style></head><body><nav>Home Menu</nav><header>Site banner</header>
    <main><h1>Heading one</h1><p>Body text here.</p><template>hidden</template></main>
    <footer>Copyright</footer></body></html>"""
    found = extract(html, "text/html", "utf-8", 10_000)
    assert found.title == "The Title"
    assert found.description == "About queues"
    assert found.headings == "Heading one"
    assert "Body text here." in found.text
    for boilerplate in ("secret", "Menu", "banner", "hidden", "Copyright", ".x{}"):
        assert boilerplate not in found.text


def test_extraction_of_plain_text_and_broken_html() -> None:
    assert extract(b"just  words\n here", "text/plain", None, 100).text == "just words here"
    broken = extract(b"<p>unclosed <b>bold <!-- comment", "text/html", "utf-8", 100)
    assert broken.text.startswith("unclosed bold")


def test_charset_from_header_meta_bom_and_guess() -> None:
    cyrillic = "<html><body>Привет мир</body></html>".encode("cp1251")
    assert sniff_encoding(cyrillic, "windows-1251") == "cp1251"
    meta = b'<meta charset="windows-1251">' + cyrillic
    assert sniff_encoding(meta, None) == "cp1251"
    assert "Привет" in extract(meta, "text/html", sniff_encoding(meta, None), 100).text
    assert sniff_encoding(b"\xef\xbb\xbfhello", "latin-1") == "utf-8"
    assert sniff_encoding("naïve".encode(), None) == "utf-8"
    assert sniff_encoding(b"x", "no-such-charset") == "utf-8"


def test_only_successful_html_and_text_are_indexed() -> None:
    assert is_indexable(200, "text/html")
    assert is_indexable(203, "text/plain")
    assert not is_indexable(404, "text/html")
    assert not is_indexable(301, "text/html")
    assert not is_indexable(200, "image/png")


def test_site_terms_let_a_domain_match_its_subdomains() -> None:
    assert site_terms("Docs.Python.org") == "docs.python.org python.org"
    assert site_terms("127.0.0.1") == "127.0.0.1"
    assert site_terms("localhost") == "localhost"
