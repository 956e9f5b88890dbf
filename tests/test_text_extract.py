"""The text the index keeps of a page reads as a browser shows it."""

from __future__ import annotations

from pathlib import Path

from archiver_plugins.index.search import search
from archiver_plugins.index.store import Capture, engine_dir, open_or_create
from archiver_plugins.index.writer import Batcher
from archiver_plugins.markup.text import extract, visible_text
from warc_pages import write_warc

from archiver.model import Page

SPHINX = """<html><head><title>Event loop</title></head><body><main>
<h2>Event loop methods<a class="headerlink" href="#methods" title="Link to this heading">¶</a></h2>
<dl class="py function"><dt class="sig" id="asyncio.get_running_loop">
<span class="sig-prename"><span class="pre">asyncio.</span></span><span class="sig-name">\
<span class="pre">get_running_loop</span></span><span>(</span><span>)</span>
<a class="headerlink" href="#asyncio.get_running_loop" title="Link to this definition">¶</a></dt>
<dd><p>Return the running event loop in the current OS thread.</p><p>Raise a <code>RuntimeError</code>
if there is no running event loop.</p><ul><li>first</li><li>second</li></ul></dd></dl>
<h3>Notes<a href="#notes">§</a></h3><p>A <b>bold</b>ly <em>inline</em> word and a line<br>break.</p>
</main></body></html>"""


def test_inline_elements_join_and_blocks_are_set_apart() -> None:
    text = extract(SPHINX.encode(), "text/html", "utf-8", 100_000).text
    assert "asyncio.get_running_loop() Return the running event loop" in text
    assert "Raise a RuntimeError if there" in text
    assert "thread. Raise" in text and "first second" in text
    assert "boldly inline word and a line break." in text


def test_permalink_marks_are_dropped() -> None:
    extracted = extract(SPHINX.encode(), "text/html", "utf-8", 100_000)
    for part in (extracted.text, extracted.headings):
        assert "¶" not in part and "§" not in part
    assert "Event loop methods Notes" in extracted.headings


def test_the_index_still_finds_the_words_and_snippets_read_well(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    ix, _ = open_or_create(engine_dir(archive))
    batcher = Batcher(ix, batch_size=10, batch_seconds=60, max_chars=100_000)
    capture = Capture(
        "http://docs.test/loop.html", "20240501120003", 200, "text/html", "utf-8", SPHINX.encode()
    )
    batcher.add(capture)
    batcher.commit()
    ix.close()
    write_warc(archive, [capture])  # the snippet's text is read from the record
    for word in ("get_running_loop", "asyncio", "RuntimeError", "boldly", "first", "break", "methods"):
        assert search(archive, word).total == 1, word
    (hit,) = search(archive, "running loop").hits
    assert "¶" not in hit.snippet and "( )" not in hit.snippet
    assert "get_running_loop()" in hit.snippet.replace("</b>", "").replace('<b class="match term0">', "")


def test_visible_text_helper_for_plugins() -> None:
    page = Page(
        url="http://docs.test/",
        status=200,
        headers=(("Content-Type", "text/html; charset=utf-8"),),
        content=b"<html><head><script>var x = 1;</script></head><body><p>Hello <b>wor</b>ld</p>"
        b"<p>again</p><style>p{}</style></body></html>",
        encoding="utf-8",
    )
    assert visible_text(page) == "Hello world again"
