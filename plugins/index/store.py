"""Where the index lives in an archive, the one writer of an index, and how documents are made.

Layout: ``ARCHIVE/index/tantivy/`` (or ``whoosh-stock/``, see `engine`) holds the index
(``ARCHIVE/index/whoosh/`` is the index of earlier versions: see `legacy_message`),
``ARCHIVE/index/spool.sqlite`` the pages waiting to be indexed, ``ARCHIVE/index/writer.lock``
the lock every index writer holds (an ``flock``: the kernel frees it when its process dies,
so a killed writer never leaves a stale lock behind).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archiver.api import INDEX_FOLDER, ArchiveError, ArchiveLockedError

from ..markup.text import extract
from .engine import (
    WRITER_MEMORY_MB,
    DamagedIndexError,
    Engine,
    MissingIndexError,
    OutdatedIndexError,
)
from .schema import plain_analyzer, site_terms, text_analyzer

__all__ = ["WRITER_MEMORY_MB", "DamagedIndexError", "MissingIndexError", "OutdatedIndexError"]

DEFAULT_MAX_CHARS = 200_000
ENGINE_FOLDERS = {"tantivy": "tantivy", "whoosh": "whoosh-stock"}
"""Each engine's folder under ``ARCHIVE/index/``, searched in this order."""
LEGACY_FOLDER = "whoosh"
"""The index of versions before 0.9: whoosh segments in a codec of their own, which this
version cannot read (`legacy_message`)."""
MARKER = "REINDEX-NEEDED"
"""A file in ``ARCHIVE/index/`` saying the index misses pages (set aside after damage)."""

EXIT_EXHAUSTED = 75
"""The index writer's exit code when the disk is full or the open-files limit is spent:
restarting it would only fail again."""


@dataclass(frozen=True, slots=True)
class RecordRef:
    """Where the WARC files hold a page's response: what the spool keeps instead of a copy.

    `target` is the record's WARC-Target-URI and `digest` its WARC-Payload-Digest
    (``sha1:BASE32``), checked when the record is read back, so that a record that is not
    the page (a file cut back or replaced since) is never indexed in its place."""

    filename: str
    offset: int
    length: int
    target: str
    digest: str


@dataclass(frozen=True, slots=True)
class Capture:
    """One successful page as the writer receives it: what the crawl or a WARC record gave."""

    url: str
    time: str
    """Capture time, 14 digits (UTC), equal to the WARC-Date of its record to the second."""
    status: int
    content_type: str
    encoding: str | None
    content: bytes
    title: str = ""
    """The title its source gave (a WACZ's pages.jsonl: the page as its browser showed it),
    which goes before the one the HTML holds."""
    record: RecordRef | None = None
    """The WARC record holding `content`, when one is known: the spool then keeps this
    reference and reads the content back from the record when the page is indexed."""


def spool_path(archive: Path) -> Path:
    return index_root(archive) / "spool.sqlite"


def index_root(archive: Path) -> Path:
    return archive / INDEX_FOLDER


def default_engine() -> str:
    """tantivy where its wheel is installed, else stock whoosh."""
    try:
        import tantivy  # noqa: F401
    except ImportError:
        return "whoosh"
    return "tantivy"


def engine_of(folder: Path) -> str:
    """The engine whose folder (or folder being built, ``NAME.new``) `folder` is."""
    base = folder.name.split(".", 1)[0]
    for name, folder_name in ENGINE_FOLDERS.items():
        if folder_name == base:
            return name
    raise ValueError(f"not an index folder: {folder}")


def present_dir(archive: Path) -> Path | None:
    """The folder of the index the archive has, whatever its engine; None when it has none."""
    for folder_name in ENGINE_FOLDERS.values():
        folder = index_root(archive) / folder_name
        if folder.is_dir():
            return folder
    return None


def engine_dir(archive: Path, engine: str | None = None) -> Path:
    """Where `engine`'s index lives; without one, the archive's present index, or where the
    default engine would start one."""
    if engine is None:
        found = present_dir(archive)
        if found is not None:
            return found
        engine = default_engine()
    if engine not in ENGINE_FOLDERS:
        raise ArchiveError(f"unknown index engine {engine!r} (engines: {', '.join(ENGINE_FOLDERS)})")
    return index_root(archive) / ENGINE_FOLDERS[engine]


def damaged_message(archive: Path) -> str:
    return (
        f"the search index of {archive} is damaged (a crash or a power loss cut it short); "
        f"rebuild it from the WARC files with: archiver reindex {archive}"
    )


def legacy_message(archive: Path) -> str:
    return (
        f"the search index of {archive} was made by an earlier version of archiver; "
        f"rebuild it from the WARC files with: archiver reindex {archive}"
    )


def has_legacy(archive: Path) -> bool:
    return (index_root(archive) / LEGACY_FOLDER).is_dir()


def create_engine(folder: Path) -> Engine:
    """A new, empty index in `folder` (its name says the engine)."""
    folder.mkdir(parents=True, exist_ok=True)
    return _open_folder(folder, create=True)


def _open_folder(folder: Path, create: bool) -> Engine:
    if engine_of(folder) == "tantivy":
        from .tantivy_engine import TantivyEngine

        return TantivyEngine(folder, create=create)
    from .whoosh_engine import WhooshEngine

    return WhooshEngine(folder, create=create)


def open_engine(archive: Path) -> Engine:
    """The archive's index, for reading; a one-line error when it is missing or damaged."""
    folder = present_dir(archive)
    if folder is None:
        if has_legacy(archive):
            raise OutdatedIndexError(legacy_message(archive))
        raise MissingIndexError(
            f"{archive} has no search index: crawl with the index plugin enabled, "
            f"or build one with: archiver reindex {archive}"
        )
    try:
        return _open_folder(folder, create=False)
    except MissingIndexError:
        raise MissingIndexError(
            f"{archive} has no search index yet; build one with: archiver reindex {archive}"
        ) from None
    except DamagedIndexError:
        raise DamagedIndexError(damaged_message(archive)) from None


def open_or_create(folder: Path) -> tuple[Engine, str | None]:
    """Open the index in `folder` for writing, creating it when absent.

    A damaged index is moved aside to ``FOLDER.damaged`` and a fresh one started, so the
    crawl keeps indexing; so is the index of an earlier version (``index/whoosh``).  The
    returned note says so, and a marker file tells ``search`` and ``status`` that older
    pages need ``archiver reindex``.
    """
    root = folder.parent
    note = None
    legacy = root / LEGACY_FOLDER
    if legacy.is_dir() and not folder.is_dir():
        _set_aside(legacy, root / (LEGACY_FOLDER + ".old-version"))
        note = (
            "search index was made by an earlier version; "
            "started a new one (run `archiver reindex` for older pages)"
        )
    if folder.is_dir():
        try:
            return _open_folder(folder, create=False), None
        except MissingIndexError:
            pass
        except DamagedIndexError:
            _set_aside(folder, folder.with_name(folder.name + ".damaged"))
            note = "search index was damaged; started a new one (run `archiver reindex` for older pages)"
    if note is not None:
        (root / MARKER).write_text("the index was restarted; pages indexed before are missing\n")
    return create_engine(folder), note


def _set_aside(folder: Path, aside: Path) -> None:
    shutil.rmtree(aside, ignore_errors=True)
    folder.rename(aside)


class WriterLock:
    """The one index writer of an archive: an exclusive ``flock`` on ``index/writer.lock``."""

    def __init__(self, archive: Path) -> None:
        self.path = index_root(archive) / "writer.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (process {holder})" if holder else ""
            raise ArchiveLockedError(
                f"the index of {self.path.parent.parent} is being written by another process{who}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


LEAD_CHARS = 2_000
"""Characters of a page's text kept in the index: a search's first matches are in them for
about 60% of hits (the Python docs), whose snippets then need no WARC record."""


def lead_of(text: str) -> tuple[bytes, int]:
    """(the start of `text`, cut at a space, zlib-compressed; the length of the whole text)."""
    lead = text
    if len(text) > LEAD_CHARS:
        cut = text.rfind(" ", 0, LEAD_CHARS)
        lead = text[: cut if cut > 0 else LEAD_CHARS]
    return zlib.compress(lead.encode("utf-8"), 1), len(text)


def make_document(capture: Capture, max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """What an engine indexes and stores for one capture (parses the HTML and analyses its text).

    Each field of `TEXT_FIELDS` and `WORD_FIELDS` holds its index terms separated by spaces;
    `site` its host and the domains above it; the others are stored as they are."""
    found = extract(capture.content, capture.content_type, capture.encoding, max_chars)
    host = (urlsplit(capture.url).hostname or "").lower()
    title = capture.title or found.title
    english = text_analyzer()
    words = plain_analyzer()
    lead, text_chars = lead_of(found.text)
    return {
        "url": capture.url,
        "urlwords": words.terms(capture.url),
        "title": english.terms(title),
        "headings": english.terms(found.headings),
        "description": english.terms(found.description),
        "text": english.terms(found.text),
        "spelling": words.terms(f"{title} {found.headings} {found.description}"),
        "site": site_terms(host) if host else "",
        "content_type": capture.content_type,
        "time": capture.time,
        "shown_title": title,
        "shown_description": found.description,
        "host": host,
        "status": capture.status,
        "excerpt": lead,
        "text_chars": text_chars,
    }
