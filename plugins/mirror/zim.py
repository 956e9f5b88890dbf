"""`--format zim`: the mirror's files in one ZIM file for Kiwix, with its search indexes.

The ZIM holds the same tree as the folder export (``HOST/PATH``, the landing page
``index.html``), so the links the mirror rewrote to relative paths resolve inside the
ZIM as they do on disk.  The file is written by libzim, the openZIM project's writer
(GPL-3.0-or-later, the optional extra ``zim``): it compresses the entries by cluster
and builds the full-text (Xapian) and title indexes Kiwix searches.  Pages are handed
to it one by one, so memory stays bounded by its clusters, not by the archive.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import re
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from html import unescape
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from archiver.api import ArchiveError, UsageError

from .contents import HTML_TYPES
from .icon import illustration
from .maintext import searchable_text
from .names import MirrorPath
from .options import ExportOptions, start_pages
from .plan import Plan, normalize
from .sinks import FileEntry

if TYPE_CHECKING:
    from libzim.writer import Creator

    from ..archive_reader.reader import WarcArchive

__all__ = ["EXTRA_HINT", "ZimSink", "load_libzim", "open_zim"]

EXTRA_HINT = (
    "ZIM export needs the optional extra zim: pip install -e '.[zim]' in a clone of archiver,"
    " or pip install 'libzim>=3.2,<3.3' 'pillow>=10' (libzim is GPL-3.0)"
)
TITLE_CHARS = 30
"""The longest Title the ZIM metadata conventions allow (zimcheck reports a longer one)."""
DESCRIPTION_CHARS = 80
_TITLE = re.compile(rb"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_ICON_LINK = re.compile(
    rb"""<link\b(?=[^>]*\brel\s*=\s*["']?[^"'>]*\bicon\b)[^>]*\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""",
    re.IGNORECASE,
)
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_LANGUAGE = re.compile(r"^[a-z]{3}(,[a-z]{3})*$")
_HEAD_BYTES = 65536
"""How much of a page is searched for its title, description and icon."""


def load_libzim() -> Any:
    try:
        import PIL  # noqa: F401  (the icon is scaled with it)
        from libzim import writer
    except ImportError:
        raise UsageError(EXTRA_HINT) from None
    return writer


def page_title(data: bytes) -> str:
    """The text of a page's <title> (collapsed white space), or "" if it has none."""
    match = _TITLE.search(data[:_HEAD_BYTES])
    if match is None:
        return ""
    return _CONTROL.sub("", " ".join(unescape(match.group(1).decode("utf-8", "replace")).split()))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def check_language(language: str) -> str:
    code = language.strip().lower()
    if not _LANGUAGE.match(code):
        raise UsageError(f"--language wants ISO 639-3 codes such as eng or fra,deu, not {language!r}")
    return code


def main_url(archive: FsPath, plan: Plan, options: ExportOptions) -> str | None:
    """The page a reader opens first: `--main`, else the crawl's first root in the plan."""
    if options.main is not None:
        wanted = normalize(options.main)
        item = plan.final(wanted) if wanted else None
        if item is None:
            raise UsageError(f"--main {options.main}: not a page of this archive")
        return item.url
    for url in start_pages(archive, plan):
        item = plan.final(url)
        if item is not None and item.mime in HTML_TYPES:
            return item.url
    return None


def _icon_url(warcs: WarcArchive, plan: Plan, page_url: str) -> str | None:
    """The site icon of `page_url`: its ``<link rel=icon>`` in the plan, else /favicon.ico."""
    item = plan.items[page_url]
    try:
        head = warcs.read(item.capture).content()[:_HEAD_BYTES]
    except ArchiveError:
        head = b""
    candidates = []
    for match in _ICON_LINK.finditer(head):
        raw = next(group for group in match.groups() if group is not None)
        with contextlib.suppress(ValueError):  # an href urljoin cannot read ("http://[")
            candidates.append(urljoin(page_url, unescape(raw.decode("utf-8", "replace")).strip()))
    parts = urlsplit(page_url)
    candidates.append(f"{parts.scheme}://{parts.netloc}/favicon.ico")
    for candidate in candidates:
        url = normalize(candidate)
        found = plan.final(url) if url else None
        if found is not None and found.mime.startswith("image/"):
            return found.url
    return None


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Standard output closed to libzim, which prints its steps there when it finishes a file
    (``Resolve redirect``, ``set index``): they would be mixed into `--json` output."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


class Backlog:
    """Pages handed to libzim that its worker thread has not indexed yet, kept few.

    libzim queues its work (compressing the clusters, indexing the pages) for its worker
    threads without a bound: a Python loop that reads and rewrites pages faster than
    Zstandard and Xapian keep up (always, at libzim's compression level) would hold every
    page in memory (460 MB and growing on the 10,000-page bench site).  The worker takes
    the tasks in order and asks each page's `_IndexText` for its text when it indexes it,
    so the loop waits while more than `limit` pages are not yet asked for: all the work
    queued before them is done by then.  Should libzim stop asking (a version that indexes
    otherwise), the loop stops waiting after `stall` seconds without progress.
    """

    def __init__(self, limit: int, stall: float = 60.0) -> None:
        self.limit = limit
        self.stall = stall
        self.handed = self.indexed = 0
        self.stalled = False
        self._changed = threading.Condition()

    def hand(self) -> None:
        with self._changed:
            self.handed += 1

    def indexed_one(self) -> None:
        with self._changed:
            self.indexed += 1
            self._changed.notify()

    def wait(self) -> None:
        with self._changed:
            while not self.stalled and self.handed - self.indexed > self.limit:
                before = self.indexed
                if not self._changed.wait(self.stall) and self.indexed == before:
                    self.stalled = True


XAPIAN_FLUSH_PAGES = 250
MAX_BACKLOG = 256
"""Pages libzim may have queued and not yet indexed (about 256 x 30 KB of text and clusters)."""


class _IndexText:
    """What libzim's full-text index holds of a page: its title and main text (no navigation,
    side bars or footers: the text our own search index holds)."""

    def __init__(self, title: str, text: str, backlog: Backlog) -> None:
        self.title, self.text, self.backlog = title, text, backlog
        self.counted = False

    def has_indexdata(self) -> bool:
        if not self.counted:  # libzim's worker asks this first, when it indexes the page
            self.counted = True
            self.backlog.indexed_one()
        return True

    def get_title(self) -> str:
        return self.title

    def get_content(self) -> str:
        return self.text

    def get_keywords(self) -> str:
        return ""

    def get_wordcount(self) -> int:
        return len(self.text.split())

    def get_geoposition(self) -> tuple[float, float] | None:
        return None


class _Entry:
    """One ZIM entry handed to libzim: its path, title, type and bytes."""

    def __init__(
        self, writer: Any, path: str, title: str, mime: str, data: bytes, index: _IndexText | None
    ) -> None:
        self._writer = writer
        self.path, self.title, self.mime, self.data, self.index = path, title, mime, data, index
        self.front = index is not None

    def get_indexdata(self) -> _IndexText | None:
        return self.index

    def get_path(self) -> str:
        return self.path

    def get_title(self) -> str:
        return self.title

    def get_mimetype(self) -> str:
        return self.mime

    def get_contentprovider(self) -> Any:
        return self._writer.StringProvider(self.data)

    def get_hints(self) -> dict[Any, int]:
        hint = self._writer.Hint
        compress = not self.mime.startswith(("image/", "video/", "audio/", "font/woff"))
        return {hint.FRONT_ARTICLE: int(self.front), hint.COMPRESS: int(compress)}


class ZimSink:
    """The export's files as entries of a ZIM file, written to ``NAME.partial`` and renamed at the end."""

    def __init__(
        self, output: FsPath, plan: Plan, metadata: dict[str, str], main: MirrorPath, icon: bytes
    ) -> None:
        writer = load_libzim()
        self._writer = writer
        self.output = output
        self.partial = output.with_name(output.name + ".partial")
        self.plan = plan
        self.metadata = metadata
        self.main = main
        self.icon = icon
        self.written = self.unchanged = self.removed = self.size = 0
        self.payload = 0
        """Bytes handed to libzim (before its compression)."""
        self.description = ""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.partial)
        # Xapian keeps the postings of up to 10,000 pages in memory before it writes them
        # (80 MB every 500 pages of the bench site); it reads this when libzim opens its indexes.
        os.environ.setdefault("XAPIAN_FLUSH_THRESHOLD", str(XAPIAN_FLUSH_PAGES))
        self._entry_class = type("ZimEntry", (_Entry, writer.Item), {})
        self._index_class = type("ZimIndexText", (_IndexText, writer.IndexData), {})
        self.backlog = Backlog(MAX_BACKLOG)
        # One compression thread: libzim compresses each cluster with Zstandard at a high level,
        # whose context holds about 75 MB; its default of four threads peaked at 330 MB. The
        # thread still runs beside this one, which reads and rewrites the next pages.
        self._creator: Creator = (
            writer.Creator(str(self.partial)).config_indexing(True, metadata["Language"]).config_nbworkers(1)
        )
        try:
            self._creator.__enter__()
        except Exception as exc:  # libzim reports a file it cannot create as a RuntimeError
            raise ArchiveError(f"cannot write {output}: {exc}") from None

    def fresh(self, path: MirrorPath, source: str) -> FileEntry | None:
        return None

    def blocked(self, path: MirrorPath) -> str | None:
        return None

    def _mime(self, path: MirrorPath, url: str) -> str:
        item = self.plan.items.get(url)
        if item is not None and item.mime:
            return item.mime
        guessed, _ = mimetypes.guess_type(path[-1])
        return guessed or "application/octet-stream"

    def put(
        self,
        path: MirrorPath,
        data: bytes,
        *,
        url: str,
        source: str,
        mtime: float | None,
        missing: list[list[str]] | None = None,
    ) -> None:
        mime = self._mime(path, url)
        index = None
        title = ""
        if mime in HTML_TYPES:
            found = searchable_text(data, mime)
            title = page_title(data) or found.title
            text = " ".join(part for part in (found.description, found.text) if part)
            index = self._index_class(title, text, self.backlog)
            if path == self.main:
                self.description = found.description
        item = self._entry_class(self._writer, "/".join(path), title, mime, data, index)
        try:
            self._creator.add_item(item)
        except RuntimeError as exc:
            raise ArchiveError(f"libzim refused {'/'.join(path)}: {exc}") from None
        if index is not None:
            self.backlog.hand()
            self.backlog.wait()
        self.written += 1
        self.payload += len(data)

    def finish(self) -> None:
        creator = self._creator
        metadata = dict(self.metadata)
        if self.description:
            metadata["Description"] = _cut(self.description, DESCRIPTION_CHARS)
        creator.set_mainpath("/".join(self.main))
        creator.add_illustration(48, self.icon)
        for name, value in metadata.items():
            creator.add_metadata(name, value)
        try:
            with _quiet_stdout():
                creator.__exit__(None, None, None)
        except Exception as exc:
            self.partial.unlink(missing_ok=True)
            raise ArchiveError(f"cannot finish {self.output}: {exc}") from None
        os.replace(self.partial, self.output)
        self.size = self.output.stat().st_size

    def abort(self) -> None:
        # Told of an exception, libzim stops without writing the rest of the file.
        with contextlib.suppress(Exception), _quiet_stdout():
            self._creator.__exit__(InterruptedError, InterruptedError(), None)
        self.partial.unlink(missing_ok=True)


def open_zim(
    archive: FsPath, output: FsPath, warcs: WarcArchive, plan: Plan, options: ExportOptions
) -> ZimSink:
    """A ZimSink for `plan`, with the metadata Kiwix shows: title, host, date, icon."""
    load_libzim()
    language = check_language(options.language)
    main = main_url(archive, plan, options)
    host = urlsplit(main).hostname if main else None
    if host is None:
        hosts = sorted({urlsplit(url).hostname or "" for url in plan.items})
        host = hosts[0] if hosts else archive.resolve().name
    newest = max((item.capture.timestamp for item in plan.items.values()), default="")
    try:
        date = datetime.strptime(newest[:8], "%Y%m%d").date().isoformat()
    except ValueError:
        date = datetime.now(UTC).date().isoformat()
    icon = _icon_url(warcs, plan, main) if main else None
    icon_bytes = None
    if icon is not None:
        with contextlib.suppress(ArchiveError):
            icon_bytes = warcs.read(plan.items[icon].capture).content()
    title = options.title or host
    name = re.sub(r"[^a-z0-9.-]+", "-", host.lower()).strip("-") or "archive"
    metadata = {
        "Name": f"{name}_{language.split(',')[0]}_all",
        "Title": _cut(title, TITLE_CHARS),
        "Description": _cut(f"Offline copy of {host}, captured {date}", DESCRIPTION_CHARS),
        "Language": language,
        "Creator": host,
        "Publisher": "site-archiver",
        "Date": date,
        "Source": main or host,
        "Scraper": "site-archiver",
        "Tags": "_category:other;_pictures:yes;_videos:yes;_details:yes",
    }
    main_path = plan.paths[main] if main else ("index.html",)
    return ZimSink(output, plan, metadata, main_path, illustration(icon_bytes))
