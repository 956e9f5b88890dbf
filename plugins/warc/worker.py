"""The WARC writer process: builds, compresses and appends the records the crawl hands it.

Run as ``python -m archiver_plugins.warc.worker CRAWL_PID`` by `WarcWriter` (writer.py).
Building a record is Python (warcio) as well as zlib: in threads of the crawl process it
fought the event loop for the GIL, and the hand-offs cost as much as the work (a hundred
futex calls a page, a third of the WARC plugin's CPU in the kernel).  In a process of its
own it runs on another core, and the crawl only pickles each page onto a pipe.

Both ways a frame is a 4-byte big-endian length and a pickle.  The crawl sends
``(kind, seq, *args)``: ``start`` (the folder and settings), ``page`` (one exchange) and
``close``; each is answered ``("ok", seq, result, logs)`` or ``("error", seq, message,
logs)``, in order.  A page is answered only once its records were written (and fsynced
when asked), so the crawl never marks a URL done before it is on disk, and as soon as they
are: answering the frames read together in one write saved a system call a page but held
the whole group's pages until the last was written, which stalled the crawl whenever this
process got less CPU than it (a busy machine).

The crawl decides when the files close: Ctrl-C and SIGTERM, which reach the whole process
group, are ignored here.  End of input without ``close`` (the crawl died) and the crawl's
death itself (``PR_SET_PDEATHSIG``) stop the process as a crash would, files left
``.open``: the next run cuts them back to their last whole record.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from archiver.errors import ArchiveError
from archiver.model import Link, LinkKind, Page

from .dedup import DB_NAME, DedupTable
from .records import Original, PageRecords, RecordMaker
from .settings import WarcSettings
from .warcfile import Rotator, recover_open_files

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


def frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(HEAD, "big") + data


_KIND_NAMES = {kind: str(kind.value) for kind in LinkKind}


def page_message(
    seq: int,
    page: Page,
    links: Sequence[Link],
    refers_to: tuple[str, str, str | None, str | None] | None = None,
) -> bytes:
    """The ``page`` frame, on the crawl's event loop: kept to plain values, which pickle
    fastest (an aware datetime alone costs more than the rest, so it goes as text)."""
    fields = tuple(getattr(page, name) for name in PAGE_FIELDS)
    fields = (*fields[:_WHEN], fields[_WHEN].isoformat(), *fields[_WHEN + 1 :])
    kinds = _KIND_NAMES
    return frame(("page", seq, fields, [(link.url, kinds[link.kind]) for link in links], refers_to))


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


class Session:
    """The files of one crawl: what the threads of the crawl process did before."""

    def __init__(self) -> None:
        self.settings = WarcSettings()
        self.maker = RecordMaker(self.settings.gzip, self.settings.gzip_level)
        self.dedup: DedupTable | None = None
        self.rotator: Rotator | None = None
        self.folder: Path | None = None
        self.closed = False

    def handle(self, message: tuple[Any, ...]) -> Any:
        kind = message[0]
        if kind == "page":
            return self.page(message[2], message[3], message[4])
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
            self.dedup = DedupTable(folder.parent / DB_NAME)
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

    def page(
        self,
        fields: tuple[Any, ...],
        links: list[tuple[str, str]],
        refers_to: tuple[str, str, str | None, str | None] | None = None,
    ) -> tuple[int, int, bool]:
        """Write one exchange; answer (records, bytes, whether the response is a revisit).

        `refers_to` (URI, date, record id, payload digest) is the stored capture a 304 confirmed.
        """
        if self.rotator is None:
            raise ArchiveError("WARC writer used before crawl_started")
        page = page_of(fields)
        originals = self.dedup if self.dedup is not None else _NONE
        built = self.maker.page(
            page,
            links,
            originals,
            dedup=self.settings.dedup,
            metadata=self.settings.metadata,
            not_modified=Original(*refers_to[:3]) if refers_to is not None else None,
            not_modified_digest=refers_to[3] if refers_to is not None else None,
        )
        self._write(built)
        revisit = any(r.record_type == "revisit" for r in built.records)
        return len(built.records), built.size, revisit

    def resources(self, parts: list[tuple[str, str, bytes]], moment: str) -> tuple[int, int]:
        """Write resource records a plugin made of a page; answer (records, bytes)."""
        if self.rotator is None:
            raise ArchiveError("WARC writer used before crawl_started")
        built = self.maker.resources(parts, datetime.fromisoformat(moment))
        self._write(built)
        return len(built.records), built.size

    def _write(self, records: PageRecords) -> None:
        assert self.rotator is not None
        try:
            written = self.rotator.write(records)
        except OSError as exc:
            current = self.rotator.current
            where = current.path if current is not None else self.folder
            raise ArchiveError(
                f"cannot write WARC file {where}: {exc.strerror or exc}"
                " (the file was cut back to its last whole record; resume once fixed)"
            ) from exc
        if self.dedup is not None and records.digest is not None and records.original is not None:
            self.dedup.add(records.digest, records.original, written.name)

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


def serve(session: Session, collected: _Collected, source: int = 0, sink: int = 1) -> None:
    """Answer frames from `source` on `sink` until ``close`` or the end of input."""
    buffer = bytearray()
    while not session.closed:
        chunk = os.read(source, READ_SIZE)
        if not chunk:
            return
        buffer += chunk
        for message in split_frames(buffer):
            seq = message[1]
            try:
                result = session.handle(message)
            except ArchiveError as exc:
                answer = frame(("error", seq, str(exc), collected.take()))
            except Exception as exc:  # a bug must fail the page, not hang the crawl
                traceback.print_exc()
                answer = frame(("error", seq, f"WARC writer: {exc!r}", collected.take()))
            else:
                answer = frame(("ok", seq, result, collected.take()))
            _write_all(sink, answer)


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
