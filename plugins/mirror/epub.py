"""`--format epub`: the main text of an archive's pages as the chapters of an EPUB 3 book.

Chapters come in crawl order (the archive's order, which a crawl from a root makes the
order of links from it), one per HTML page chosen by `--pages`/`--under`, each the
page's main text (`chapters`), with its PNG, JPEG and GIF images.  The table of contents
lists the chapters' titles, each under the chapter whose URL holds it (``/docs/`` above
``/docs/page``).  The book is written by mkepub (MIT), which keeps each chapter in a
temporary folder until the book is zipped, so memory stays bounded by one page.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from html import escape
from pathlib import Path as FsPath
from typing import Any
from urllib.parse import urldefrag, urlsplit

from archiver.api import ArchiveError, UsageError, choose_encoding

from ..archive_reader.reader import Capture, WarcArchive
from .chapters import Chapter, chapter_of
from .contents import HTML_TYPES, declared_charset
from .options import ExportOptions, ExportResult, Progress, check_output, open_warcs
from .plan import Item, Plan, build_plan, normalize
from .rendered import rendered_dom
from .zim import check_language

__all__ = ["export_epub"]

MAX_IMAGE_BYTES = 8 << 20
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)
"""The image types every EPUB reader shows, known by their first bytes (never by the
server's word: a reader refuses a file whose content is not what the book says)."""
_CHAPTER_NAME = "page{:04}.xhtml"
"""mkepub's name for the n-th chapter (from 1), which links between chapters must know first."""
_STYLE = (
    "body{line-height:1.45}img{max-width:100%;height:auto}pre{white-space:pre-wrap}"
    "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.2em .4em}"
)


def _book_class() -> Any:
    """mkepub's `Book`, its templates rendered with escaping.

    mkepub renders its templates without escaping, so a page title such as ``Q&A`` gives
    a table of contents that is not XML and that readers refuse; the chapters' bodies,
    which are XHTML already, are marked safe instead.
    """
    import jinja2
    import markupsafe
    import mkepub.mkepub as library

    environment = jinja2.Environment(loader=jinja2.PackageLoader("mkepub"), autoescape=True)
    environment.filters.update(library.env.filters)

    class Book(library.Book):  # type: ignore[misc]
        def _write(self, template: str, path: str, **data: Any) -> None:
            if "body" in data:
                data["body"] = markupsafe.Markup(data["body"])
            with open(self.path / path, "w", encoding="utf-8") as file:
                file.write(environment.get_template(template).render(**data))

    return Book


def _chosen(plan: Plan, options: ExportOptions) -> list[Item]:
    """The pages that become chapters, in crawl order."""
    try:
        pattern = re.compile(options.pages) if options.pages else None
    except re.error as exc:
        raise UsageError(f"--pages {options.pages!r}: not a regular expression ({exc})") from None
    under = normalize(options.under) if options.under else None
    if options.under and under is None:
        raise UsageError(f"--under {options.under!r}: not an http(s) URL")
    pages = [
        item
        for item in plan.items.values()
        if item.mime in HTML_TYPES
        and not item.is_redirect
        and (pattern is None or pattern.search(item.url))
        and (under is None or item.url.startswith(under))
    ]
    return sorted(pages, key=lambda i: (i.capture.filename, i.capture.offset, i.url))


class _Links:
    """Where the links of the chapters go: chapter files, the book's images, or the web."""

    def __init__(self, warcs: WarcArchive, plan: Plan, pages: list[Item], book: Any) -> None:
        self.warcs = warcs
        self.plan = plan
        self.book = book
        self.chapter_of = {item.url: n for n, item in enumerate(pages, start=1)}
        self.numbers: dict[str, int] = {}
        self.images: dict[str, str | None] = {}
        self.errors: list[str] = []

    def number(self, url: str) -> int | None:
        target = normalize(urldefrag(url)[0])
        item = self.plan.final(target) if target else None
        return self.chapter_of.get(item.url) if item is not None else None

    def page(self, url: str) -> str | None:
        number = self.number(url)
        if number is not None:
            return _CHAPTER_NAME.format(number)
        scheme = urlsplit(url).scheme.lower()
        return url if scheme in ("http", "https", "mailto") else None

    def image(self, url: str) -> str | None:
        target = normalize(url)
        item = self.plan.final(target) if target else None
        if item is None or not item.mime.startswith("image/"):
            return None
        if item.url not in self.images:
            self.images[item.url] = self._add_image(item)
        return self.images[item.url]

    def _add_image(self, item: Item) -> str | None:
        try:
            data = self.warcs.read(item.capture).content()
        except ArchiveError as exc:
            self.errors.append(f"{item.url}: {exc}")
            return None
        kind = next((kind for magic, kind in _IMAGE_MAGIC if data.startswith(magic)), None)
        if kind is None or len(data) > MAX_IMAGE_BYTES:
            return None
        name = f"{hashlib.sha256(item.url.encode()).hexdigest()[:16]}.{kind}"
        self.book.add_image(name, data)
        return f"images/{name}"


def _markup(warcs: WarcArchive, item: Item) -> str:
    dom: Capture | None = rendered_dom(warcs, item.capture)
    if dom is not None:  # a --browser crawl's page: its text as the browser built it
        return warcs.read(dom).content().decode("utf-8", "replace")
    response = warcs.read(item.capture)
    content = response.content()
    codec, _ = choose_encoding(content, response.content_type, declared_charset(response))
    return content.decode(codec, "replace")


def _parent(url: str, added: dict[str, Any]) -> Any:
    """The chapter already in the book whose URL holds `url` most closely, if any (not the root)."""
    path = urlsplit(url)
    parts = path.path.rstrip("/").split("/")
    while len(parts) > 2:  # the site root holds every page: its chapters stay at the top
        parts.pop()
        prefix = f"{path.scheme}://{path.netloc}{'/'.join(parts)}/"
        if prefix in added and prefix != url:
            return added[prefix]
    return None


def export_epub(
    archive: FsPath, output: FsPath, options: ExportOptions, progress: Progress | None = None
) -> ExportResult:
    """Write the pages of `archive` chosen by `options` as an EPUB 3 book at `output`."""
    started = time.monotonic()
    language = check_language(options.language)
    warcs, warnings = open_warcs(archive)
    check_output(output, "epub")
    plan = build_plan(warcs, options.timestamp)
    pages = _chosen(plan, options)
    if not pages:
        raise ArchiveError(f"{archive} holds no page for the book (no HTML page matches the selection)")
    result = ExportResult(archive, output, "epub", warnings=warnings, errors=[*warcs.problems, *plan.errors])
    host = urlsplit(pages[0].url).hostname or archive.resolve().name
    title = options.title or host
    newest = max(item.capture.timestamp for item in pages)
    book = _book_class()(
        title,
        lang=language,
        author=host,
        description=f"The pages of {host}, captured {newest[:4]}-{newest[4:6]}-{newest[6:8]}",
        published=f"{newest[:4]}-{newest[4:6]}-{newest[6:8]}",
    )
    try:
        book.set_stylesheet(_STYLE)
        links = _Links(warcs, plan, pages, book)
        added: dict[str, Any] = {}
        for done, item in enumerate(pages):
            if progress is not None:
                progress(done, len(pages))
            try:
                chapter: Chapter | None = chapter_of(_markup(warcs, item), item.url, links.page, links.image)
            except ArchiveError as exc:
                result.errors.append(f"{item.url}: {exc}")
                chapter = None
            if chapter is None:
                # mkepub numbers chapters as they are added: an empty page still takes its
                # number, so that links to the chapters after it stay right.
                chapter = Chapter(title=item.url, body=f"<p>{escape(item.url)}</p>")
            added[item.url] = book.add_page(chapter.title, chapter.body, parent=_parent(item.url, added))
            result.files += 1
        if progress is not None:
            progress(len(pages), len(pages))
        result.errors.extend(links.errors)
        partial = output.with_name(output.name + ".partial")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        try:
            book.save(str(partial))
            os.replace(partial, output)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise ArchiveError(f"cannot write {output}: {exc.strerror or exc}") from None
    finally:
        book.tempdir.cleanup()
    result.written = result.files
    result.bytes = output.stat().st_size
    result.seconds = time.monotonic() - started
    return result
