"""The WARC writer process: builds, compresses and appends the records the crawl hands it.

Run as ``python -m archiver_plugins.warc.worker CRAWL_PID`` by `WarcWriter` (writer.py).
Building a record is Python as well as zlib: in threads of the crawl process it fought
the event loop for the GIL, and the hand-offs cost as much as the work.  In a process of
its own it runs on another core, and the crawl only pickles each page onto a pipe.

Both ways a frame is a 4-byte big-endian length and a pickle.  The crawl sends
``(kind, seq, *args)``: ``start`` (the folder and settings), ``page`` (one exchange),
``resources`` and ``close``.  This process answers with ``("answers", [(status, seq,
result), ...], logs)`` frames, in order, ``status`` being ``ok`` or ``error`` (``result``
then the message).

Group commit: the pages read together are built one after the other, then written with
one write per file (and one fsync when asked) and answered with one frame, at most
`GROUP` pages at a time.  A page is answered only once its records were written, so the
crawl never marks a URL done before it is on disk.  The cap keeps the crawl busy: when
this process answered everything it had read at once, the crawl's tasks all waited for
the last page of a large group while this process worked, then this process waited for
the crawl (a busy machine made the groups large).  With groups of a few pages the crawl
keeps sending while a group is written, and the system calls still fall several-fold.

The crawl decides when the files close: Ctrl-C and SIGTERM, which reach the whole process
group, are ignored here.  End of input without ``close`` (the crawl died) and the crawl's
death itself (``PR_SET_PDEATHSIG``) stop the process as a crash would, files left
``.open``: the next run cuts them back to their last whole record.
"""

from __future__ import annotations

import itertools
import logging
import operator
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from archiver.api import DEDUP_NAME, ArchiveError, Link, Page, exhausted

from .dedup import DedupTable
from .records import Original, Originals, PageRecords, RecordMaker
from .settings import WarcSettings
from .warcfile import Rotator, WarcFile, recover_open_files

log = logging.getLogger("archiver_plugins.warc.worker")

PAGE_FIELDS = (
    "url",
    "status",
    "reason",
    "http_version",
    "method",
    "request_headers",
    "headers",
    "body",
    "fetched_at",
    "elapsed",
    "peer",
    "depth",
    "referrer",
    "redirect_to",
    "truncated",
    "request_target",
)
"""What of a `Page` the records need: the rest (decoded text, encoding) stays in the crawl."""
_WHEN = PAGE_FIELDS.index("fetched_at")

HEAD = 4
READ_SIZE = 1 << 20
GROUP = 8
"""Pages written and answered together at most (see the module's docstring)."""
PIPE_SIZE = 1 << 20
"""Bytes the pipe to this process holds (``F_SETPIPE_SZ``): room for dozens of pages, so the
crawl rarely waits for the pipe and each read here takes what was sent since the last."""


def frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(HEAD, "big") + data


def page_message(
    seq: int,
    page: Page,
    links: Sequence[Link],
    refers_to: tuple[str, str, str | None, str | None] | None = None,
    whole: bool = False,
) -> bytes:
    """The ``page`` frame, on the crawl's event loop: kept to plain values, which pickle
    fastest (an aware datetime alone costs more than the rest, so it goes as text, and each
    link is one ``URL KIND`` string, the metadata record's outlink value)."""
    fields = _page_fields(page)
    fields = (*fields[:_WHEN], fields[_WHEN].isoformat(), *fields[_WHEN + 1 :])
    return frame(("page", seq, fields, [link.url + " " + link.kind for link in links], refers_to, whole))


_page_fields = operator.attrgetter(*PAGE_FIELDS)


def page_of(fields: Sequence[Any]) -> Page:
    values = dict(zip(PAGE_FIELDS, fields, strict=True))
    values["fetched_at"] = datetime.fromisoformat(values["fetched_at"])
    return Page(**values)


def split_frames(buffer: bytearray) -> list[Any]:
    """The whole frames at the start of `buffer`, removed from it."""
    messages = []
    start = 0
    while len(buffer) - start >= HEAD:
        size = int.from_bytes(buffer[start : start + HEAD], "big")
        end = start + HEAD + size
        if end > len(buffer):
            break
        messages.append(pickle.loads(buffer[start + HEAD : end]))
        start = end
    del buffer[:start]
    return messages


class _Collected(logging.Handler):
    """Log records of this process, sent back with the next answer and logged by the crawl."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[int, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelno, record.name, record.getMessage()))

    def take(self) -> list[tuple[int, str, str]]:
        taken, self.records = self.records, []
        return taken


Answer = tuple[str, int, Any]
"""``(status, seq, result)``: ``ok`` and what the request returns, or ``error`` and why."""


class Session:
    """The files of one crawl: what the threads of the crawl process did before."""

    def __init__(self) -> None:
        self.settings = WarcSettings()
        self.maker = RecordMaker(self.settings.gzip, self.settings.gzip_level)
        self.dedup: DedupTable | None = None
        self.rotator: Rotator | None = None
        self.folder: Path | None = None
        self.closed = False

    def handle_all(self, messages: Sequence[tuple[Any, ...]]) -> list[Answer]:
        """Answer `messages` in order; consecutive pages are written together."""
        answers: list[Answer] = []
        pages: list[tuple[Any, ...]] = []
        for message in messages:
            if message[0] == "page":
                pages.append(message)
                continue
            if pages:
                answers += self._pages(pages)
                pages = []
            answers.append(_answer(message[1], self.handle, message))
        if pages:
            answers += self._pages(pages)
        return answers

    def _pages(self, messages: Sequence[tuple[Any, ...]]) -> list[Answer]:
        try:
            return self.pages(messages)
        except Exception as exc:  # a bug (or the dedup table failing) fails the group, not the process
            traceback.print_exc()
            return [("error", message[1], f"WARC writer: {exc!r}") for message in messages]

    def handle(self, message: tuple[Any, ...]) -> Any:
        """Answer one request other than ``page`` (those go through `pages`)."""
        kind = message[0]
        if kind == "start":
            return self.start(*message[2:])
        if kind == "resources":
            return self.resources(message[2], message[3])
        if kind == "close":
            return self.close()
        raise ValueError(f"unknown message {kind!r}")

    def start(self, folder: Path, settings: WarcSettings, warcinfo: list[tuple[str, str]], pid: int) -> None:
        self.settings = settings
        self.folder = folder
        self.maker = RecordMaker(settings.gzip, settings.gzip_level)
        folder.mkdir(parents=True, exist_ok=True)
        for path, cut in recover_open_files(folder, cdxj=settings.cdxj):
            log.warning("closed %s left open by an earlier run (%d bytes cut)", path.name, cut)
        if settings.dedup:
            self.dedup = DedupTable(folder.parent / DEDUP_NAME)
            read = self.dedup.sync(folder)
            if read:
                log.info("dedup table: read the index of %d WARC file(s)", read)
        self.rotator = Rotator(
            folder,
            settings.prefix,
            settings.max_size,
            settings.gzip,
            lambda name: self.maker.warcinfo(name, warcinfo),
            cdxj=settings.cdxj,
            fsync=settings.fsync,
            on_close=self._file_closed,
            pid=pid,
        )

    def pages(self, messages: Sequence[tuple[Any, ...]]) -> list[Answer]:
        """Build the ``page`` messages' records, write them together, answer each.

        A page's answer is (records, bytes, whether the response is a revisit).  A payload
        stored by an earlier page of the group makes a revisit as if written already; when
        a write fails, that page and the rest of the group fail, and none of them is in
        the dedup table.
        """
        if self.rotator is None:
            return [("error", message[1], "WARC writer used before crawl_started") for message in messages]
        answers: dict[int, Answer] = {}
        built: list[tuple[int, PageRecords]] = []
        group: dict[str, Original] = {}
        originals = _Layered(group, self.dedup if self.dedup is not None else _NONE)
        for message in messages:
            seq = message[1]
            answer = _answer(seq, self._build, message, originals)
            if answer[0] == "ok":
                records: PageRecords = answer[2]
                built.append((seq, records))
                if records.digest is not None and records.original is not None:
                    group.setdefault(records.digest, records.original)
            else:
                answers[seq] = answer
        written: list[WarcFile] = []
        failure: ArchiveError | None = None
        try:
            self._write_many([records for _seq, records in built], written)
        except ArchiveError as exc:
            failure = exc
        for (seq, records), where in itertools.zip_longest(built, written):
            if where is None:
                answers[seq] = ("error", seq, str(failure))
                continue
            if self.dedup is not None and records.digest is not None and records.original is not None:
                self.dedup.add(records.digest, records.original, where.name)
            revisit = any(r.record_type == "revisit" for r in records.records)
            answers[seq] = ("ok", seq, (len(records.records), records.size, revisit))
        return [answers[message[1]] for message in messages]

    def _build(self, message: tuple[Any, ...], originals: Originals) -> PageRecords:
        """One exchange's records; a 304's `refers_to` (URI, date, record id, payload digest)
        is the stored capture it confirmed; a `whole` page is stored in full, never as a
        revisit (the copy a revisit would point at is damaged)."""
        _kind, _seq, fields, links, refers_to, whole = message
        return self.maker.page(
            page_of(fields),
            links,
            originals,
            dedup=self.settings.dedup and not whole,
            metadata=self.settings.metadata,
            not_modified=Original(*refers_to[:3]) if refers_to is not None else None,
            not_modified_digest=refers_to[3] if refers_to is not None else None,
        )

    def resources(self, parts: list[tuple[str, str, bytes]], moment: str) -> tuple[int, int]:
        """Write resource records a plugin made of a page; answer (records, bytes)."""
        if self.rotator is None:
            raise ArchiveError("WARC writer used before crawl_started")
        built = self.maker.resources(parts, datetime.fromisoformat(moment))
        self._write_many([built], [])
        return len(built.records), built.size

    def _write_many(self, pages: Sequence[PageRecords], written: list[WarcFile]) -> None:
        assert self.rotator is not None
        try:
            self.rotator.write_many(pages, written)
        except OSError as exc:
            current = self.rotator.current
            where = current.path if current is not None else self.folder
            raise ArchiveError(
                f"cannot write WARC file {where}: {exc.strerror or exc}"
                " (the file was cut back to its last whole record; resume once fixed)"
            ) from exc

    def _file_closed(self, name: str) -> None:
        if self.dedup is not None:
            self.dedup.file_closed(name)

    def close(self) -> int:
        """Close the current file; answer how many files this run closed."""
        self.closed = True
        if self.rotator is None:
            return 0
        try:
            self.rotator.close()
        finally:
            if self.dedup is not None:
                self.dedup.close()
                self.dedup = None
        return len(self.rotator.closed)


_NONE: dict[str, Original] = {}


class _Layered:
    """The payloads of the group being built, then those already written."""

    def __init__(self, group: dict[str, Original], written: Originals) -> None:
        self.group = group
        self.written = written

    def get(self, digest: str, /) -> Original | None:
        return self.group.get(digest) or self.written.get(digest)


def _answer(seq: int, work: Callable[..., Any], *args: Any) -> Answer:
    try:
        return ("ok", seq, work(*args))
    except ArchiveError as exc:
        return ("error", seq, str(exc))
    except Exception as exc:  # a bug must fail the page, not hang the crawl
        cause = exhausted(exc)
        if cause is not None:  # the crawl stops on it and says so once
            return ("error", seq, f"WARC writer: {cause}: {exc}")
        traceback.print_exc()
        return ("error", seq, f"WARC writer: {exc!r}")


def serve(session: Session, collected: _Collected, source: int = 0, sink: int = 1) -> None:
    """Answer frames from `source` on `sink` until ``close`` or the end of input."""
    buffer = bytearray()
    while not session.closed:
        chunk = os.read(source, READ_SIZE)
        if not chunk:
            return
        buffer += chunk
        messages = split_frames(buffer)
        for start in range(0, len(messages), GROUP):
            answers = session.handle_all(messages[start : start + GROUP])
            _write_all(sink, frame(("answers", answers, collected.take())))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _die_with(parent: int) -> None:
    """Be killed with the crawl (Linux), so a SIGKILL'd crawl leaves no writer behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the crawl died before the line above
        raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with(int(args[0]))
    collected = _Collected()
    root = logging.getLogger()
    root.addHandler(collected)
    root.setLevel(logging.INFO)
    serve(Session(), collected)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
