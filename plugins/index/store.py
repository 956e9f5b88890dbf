"""Where the index lives in an archive, how it is opened, and how documents are made.

Layout: ``ARCHIVE/index/whoosh/`` holds the whoosh index, ``ARCHIVE/index/spool.sqlite``
the pages waiting to be indexed, ``ARCHIVE/index/writer.lock`` the lock every index
writer holds (an ``flock``: the kernel frees it when its process dies, so a killed
writer never leaves a stale lock behind).  whoosh never fsyncs and a power loss can
leave a zero-length table of contents that makes ``open_dir`` raise ``TypeError``:
such an index is reported as damaged, and the WARC files rebuild it.
"""

from __future__ import annotations

import fcntl
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from whoosh import index as whoosh_index
from whoosh.filedb.filestore import FileStorage

from archiver.api import ArchiveError, ArchiveLockedError

from ..markup.text import extract
from .mapped import MappedStorage
from .schema import make_schema, site_terms

INDEX_NAME = "MAIN"
MARKER = "REINDEX-NEEDED"
DEFAULT_MAX_CHARS = 200_000
WRITER_MEMORY_MB = 32
"""The postings a segment holds before it is written (`segment.py`): ~800 bench pages, more
than a commit's default batch of 500; a writer's peak RSS is ~70 MB with it."""

EXIT_EXHAUSTED = 75
"""The index writer's exit code when the disk is full or the open-files limit is spent:
restarting it would only fail again."""


class DamagedIndexError(ArchiveError):
    """The whoosh files cannot be read (cut short by a crash or a power loss)."""


class MissingIndexError(ArchiveError):
    """The archive has no search index (yet)."""


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


def index_root(archive: Path) -> Path:
    return archive / "index"


def whoosh_dir(archive: Path) -> Path:
    return index_root(archive) / "whoosh"


def spool_path(archive: Path) -> Path:
    return index_root(archive) / "spool.sqlite"


DAMAGE_ERRORS = (TypeError, EOFError, ValueError, struct.error, KeyError, IndexError, zlib.error)


def damaged_message(archive: Path) -> str:
    return (
        f"the search index of {archive} is damaged (a crash or a power loss cut it short); "
        f"rebuild it from the WARC files with: archiver reindex {archive}"
    )


def _torn_toc(folder: Path) -> bool:
    """The newest table of contents is empty: checked before whoosh opens (and leaks) it."""
    tocs = sorted(
        folder.glob(f"_{INDEX_NAME}_*.toc"),
        key=lambda p: int(p.stem.rsplit("_", 1)[-1]) if p.stem.rsplit("_", 1)[-1].isdigit() else -1,
    )
    return bool(tocs) and tocs[-1].stat().st_size == 0


def open_index(archive: Path, *, mapped: bool = True) -> Any:
    """Open the index for reading; a clear error when it is missing or cannot be read.

    whoosh maps segment files into memory, and every page of them a scan touches counts in
    the process's RSS (~170 MB for a 3,000-page index read whole).  A search reads a few
    terms and keeps the mapping; `mapped=False` is for the scans of merges and recovery,
    which read every URL once (RSS 214 -> 44 MB for a merge of three indexes, ~10% more
    CPU)."""
    folder = whoosh_dir(archive)
    if not folder.is_dir():
        raise MissingIndexError(
            f"{archive} has no search index: crawl with the index plugin enabled, "
            f"or build one with: archiver reindex {archive}"
        )
    try:
        if _torn_toc(folder):
            raise TypeError("zero-length table of contents")
        storage = MappedStorage(str(folder)) if mapped else FileStorage(str(folder), supports_mmap=False)
        ix = storage.open_index(INDEX_NAME)
        searchable_pages(ix)
    except whoosh_index.EmptyIndexError:
        raise MissingIndexError(
            f"{archive} has no search index yet; build one with: archiver reindex {archive}"
        ) from None
    except (*DAMAGE_ERRORS, FileNotFoundError) as exc:
        raise DamagedIndexError(damaged_message(archive)) from exc
    return ix


def searchable_pages(ix: Any) -> int:
    """The index's live documents, from its table of contents: whoosh's ``doc_count()`` opens a
    reader on every segment (term dictionaries included) only to add up these numbers."""
    return sum(segment.doc_count() for segment in ix._read_toc().segments)


def writer_storage(folder: Path) -> FileStorage:
    """`folder` for a writer: files read with read(), not mapped, so that the writer's
    resident memory does not grow with the index it reads (merges, replaced pages)."""
    return FileStorage(str(folder), supports_mmap=False)


def create_index(folder: Path, schema: Any = None) -> Any:
    return writer_storage(folder).create_index(schema or make_schema(), indexname=INDEX_NAME)


def open_or_create(folder: Path) -> tuple[Any, str | None]:
    """Open the index in `folder` for writing, creating it when absent.

    A damaged index is moved aside to ``whoosh.damaged`` and a fresh one started, so
    the crawl keeps indexing; the returned note says so, and a marker file tells
    ``search`` and ``status`` that older pages need ``archiver reindex``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if _torn_toc(folder):
            raise TypeError("zero-length table of contents")
        if whoosh_index.exists_in(str(folder), indexname=INDEX_NAME):
            ix = writer_storage(folder).open_index(INDEX_NAME)
            ix.doc_count()
            return ix, None
    except (*DAMAGE_ERRORS, FileNotFoundError):
        aside = folder.with_name(folder.name + ".damaged")
        _remove_tree(aside)
        folder.rename(aside)
        folder.mkdir()
        (folder.parent / MARKER).write_text(
            "the index was damaged and restarted; pages indexed before are missing\n"
        )
        note = "search index was damaged; started a new one (run `archiver reindex` for older pages)"
        return create_index(folder), note
    return create_index(folder), None


def _remove_tree(path: Path) -> None:
    if not path.exists():
        return
    for child in path.iterdir():
        if child.is_dir():
            _remove_tree(child)
        else:
            child.unlink()
    path.rmdir()


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
    """The fields whoosh stores and indexes for one capture (parses the HTML)."""
    found = extract(capture.content, capture.content_type, capture.encoding, max_chars)
    host = (urlsplit(capture.url).hostname or "").lower()
    return {
        "url": capture.url,
        "urlwords": capture.url,
        "title": capture.title or found.title,
        "headings": found.headings,
        "description": found.description,
        "text": found.text,
        "spelling": f"{capture.title or found.title} {found.headings} {found.description}",
        "site": site_terms(host) if host else "",
        "host": host,
        "content_type": capture.content_type,
        "status": capture.status,
        "time": capture.time,
        "excerpt": lead_of(found.text),
    }
