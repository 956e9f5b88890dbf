"""`archiver export --format epub`: the pages' main text as the chapters of a book epubcheck accepts."""

from __future__ import annotations

import asyncio
import re
import zipfile
from pathlib import Path

import pytest
from archiver_plugins.mirror.export import ExportOptions, ExportResult, export_mirror
from cli_process import archiver
from mirror_site import png
from offline_tools import epubcheck, files_named
from selectolax.lexbor import LexborHTMLParser

from archiver.errors import UsageError
from archiver.testing import CrawlFn, Site

PLUGINS = ("links", "warc")
CHROME = (
    "<nav><a href='/'>Home</a> <a href='/guide/'>Guide</a> NAVIGATIONWORD</nav>"
    "<aside>SIDEBARWORD</aside><footer>FOOTERWORD</footer>"
)


def build_book_site(site: Site, other: Site) -> None:
    site.page(
        "/",
        f"<html><head><title>Q&amp;A &lt;home&gt;</title></head><body>{CHROME}<main>"
        "<h1>Welcome</h1><p>Start with the <a href='/guide/'>guide</a> or "
        f"<a href='{other.url('/away')}'>elsewhere</a>.</p></main></body></html>",
    )
    site.page(
        "/guide/",
        f"<html><head><title>The guide</title></head><body>{CHROME}<article>"
        "<h1>Guide</h1><h2 id='install'>Installing</h2><p>Run the wombat installer.</p>"
        "<img src='/img/fig.png' alt='a figure'><img src='/img/fig.webp' alt='webp figure'>"
        "<h2>Using</h2><ul><li>one</li><li>two <div>block in item</div></li></ul>"
        "<li>stray item</li><table><tr><td colspan=2>cell</td></tr></table>"
        "<p><a href='#install'>back up</a> <a href='#nowhere'>no such place</a> "
        "<a href='step#top'>next step</a> <a href='javascript:alert(1)'>script</a></p>"
        "<script>SCRIPTWORD</script></article></body></html>",
    )
    site.page(
        "/guide/step",
        f"<html><head><title>A step</title></head><body>{CHROME}<main><p>The numbat step.</p>"
        "<p><a href='/'>home</a></p></main></body></html>",
    )
    site.page("/img/fig.png", png(3, 3, (0, 0, 255)), content_type="image/png")
    site.page("/img/fig.webp", b"RIFF\0\0\0\0WEBPVP8 ", content_type="image/webp")
    other.page("/away", "<p>away</p>")


async def export(archive: Path, output: Path, **options: object) -> ExportResult:
    chosen = ExportOptions(format="epub", **options)  # type: ignore[arg-type]
    return await asyncio.to_thread(export_mirror, archive, output, chosen)


def chapters(epub: Path) -> dict[str, str]:
    with zipfile.ZipFile(epub) as book:
        return {
            name: book.read(name).decode("utf-8")
            for name in book.namelist()
            if re.fullmatch(r"EPUB/page\d+\.xhtml", name)
        }


def check(epub: Path) -> None:
    checked = epubcheck(epub)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "No errors or warnings detected" in checked.stdout, checked.stdout


async def test_epub_chapters_hold_main_text_images_links_and_toc(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    build_book_site(site, other_site)
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    epub = tmp_path / "book.epub"
    result = await export(crawl.archive, epub, title="Book & site")
    assert not result.errors and result.files == 3
    await asyncio.to_thread(check, epub)

    with zipfile.ZipFile(epub) as book:
        assert book.namelist()[0] == "mimetype" and book.read("mimetype") == b"application/epub+zip"
        toc = book.read("EPUB/toc.xhtml").decode()
        opf = book.read("EPUB/package.opf").decode()
        images = [name for name in book.namelist() if name.startswith("EPUB/images/")]
    assert "<dc:title>Book &amp; site</dc:title>" in opf
    tree = LexborHTMLParser(toc)
    entries = [(a.text(), a.attributes["href"]) for a in tree.css("nav a")]
    assert entries == [
        ("Q&A <home>", "page0001.xhtml"),
        ("The guide", "page0002.xhtml"),
        ("A step", "page0003.xhtml"),
    ]
    nested = tree.css_first("nav li li a")
    assert nested is not None and nested.text() == "A step"  # /guide/step under /guide/

    pages = chapters(epub)
    assert sorted(pages) == ["EPUB/page0001.xhtml", "EPUB/page0002.xhtml", "EPUB/page0003.xhtml"]
    home, guide, step = (LexborHTMLParser(pages[f"EPUB/page000{n}.xhtml"]) for n in (1, 2, 3))
    text = " ".join(page.body.text() for page in (home, guide, step) if page.body is not None)
    assert "Welcome" in text and "wombat installer" in text and "numbat step" in text
    for chrome in ("NAVIGATIONWORD", "SIDEBARWORD", "FOOTERWORD", "SCRIPTWORD"):
        assert chrome not in text
    links = {a.text(): a.attributes.get("href") for a in home.css("a") + guide.css("a") + step.css("a")}
    assert links["guide"] == "page0002.xhtml"
    assert links["elsewhere"] == other_site.url("/away")  # not in the book: the live web
    assert links["back up"] == "#install"
    assert links["no such place"] is None  # no such id in the chapter: no link
    assert links["next step"] == "page0003.xhtml"
    assert links["home"] == "page0001.xhtml"
    assert "script" not in links
    (image,) = images
    assert image.endswith(".png")
    img = guide.css_first("img")
    assert img is not None and img.attributes == {"src": image.removeprefix("EPUB/"), "alt": "a figure"}
    assert "webp figure" in text  # an image readers may not show: its text instead


async def test_epub_sections_and_bad_options(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    build_book_site(site, other_site)
    crawl = await crawl_archive(site.url("/"), plugins=PLUGINS)
    under = tmp_path / "under.epub"
    result = await export(crawl.archive, under, under=site.url("/guide/"))
    assert result.files == 2
    assert len(chapters(under)) == 2
    pages = await export(crawl.archive, tmp_path / "pages.epub", pages=r"/step$")
    assert pages.files == 1
    with pytest.raises(UsageError, match="not a regular expression"):
        await export(crawl.archive, tmp_path / "bad.epub", pages="(")
    with pytest.raises(Exception, match="no page for the book"):
        await export(crawl.archive, tmp_path / "none.epub", pages="nothing-matches")
    assert not files_named(tmp_path, "bad.epub") and not files_named(tmp_path, "none.epub")
    code, out = await archiver("export", crawl.archive, tmp_path / "c.epub", "--main", site.url("/"))
    assert code == 2 and out.strip().count("\n") == 0 and "--main applies to --format zim" in out


def test_hostile_markup_gives_well_formed_chapters() -> None:
    """Markup no e-reader would take (deep nesting, control characters, duplicate and invalid
    ids, links in links, items out of lists, cells out of tables) gives well-formed XHTML."""
    from xml.etree import ElementTree

    from archiver_plugins.mirror.chapters import chapter_of

    deep = "<div>" * 5000 + "deep text" + "</div>" * 5000
    html = (
        "<title>Bad \x01 title</title><body><main><p id='a'>one\x0b</p><p id='a'>dup</p>"
        "<p id='1bad'>x</p><a id='anchor'>kept</a> <a href='#anchor'>to anchor</a>"
        "<a href='http://['>not a URL</a><img src='http://[x' alt='bad src'>"
        "<a href='/x'>outer <a href='/y'>inner</a></a><li>loose</li><td>cell</td>"
        "<dd>term</dd><figcaption>cap</figcaption><p><a href='/z'><h2>heading in link</h2></a></p>"
        f"{deep}<img src='data:image/png;base64,AAAA' alt='inline'><img src='/i.png'></main></body>"
    )
    chapter = chapter_of(html, "http://h.test/", lambda url: "page0002.xhtml", lambda url: None)
    assert chapter is not None and chapter.title == "Bad  title"
    root = ElementTree.fromstring(f"<body>{chapter.body}</body>")
    text = "".join(root.itertext())
    assert "not a URL" in text and "bad src" in text
    assert "deep text" in text and "inline" in text and "\x01" not in text and "\x0b" not in text
    ids = [node.get("id") for node in root.iter() if node.get("id")]
    assert ids == ["a", "anchor"]
    assert [link.get("href") for link in root.iter("a") if link.text == "to anchor"] == ["#anchor"]
    assert not any(node.tag in ("li", "td", "dd", "figcaption") for node in root.iter())
    assert all(link.find(".//a") is None for link in root.iter("a"))
