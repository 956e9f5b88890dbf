"""WARC files on disk: IIPC names, the ``.open`` suffix, rotation, rollback of a failed write.

Blocking code, run by the writer process (worker.py) alone.  Files are created with
``O_EXCL`` (an existing file is never overwritten), written only by appending whole
pages (the pages of one group in one write), and never reopened for writing once
closed.  A write that fails (disk full, file size limit) is cut back to the end of the
last complete record before the error is raised, so the file stays valid.

Each record's CDXJ line goes to ``NAME.cdxj.open`` right after the records (one write per
group, rolled back with it), and is sorted into ``NAME.cdxj`` at close: the index of a
file being written lives on disk, not in memory, however large the file grows.  A
crashed run's ``.cdxj.open`` is dropped and the index rebuilt from the WARC file, which
is the source of truth.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import socket
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..archive_reader.capture import Capture
from ..archive_reader.cdxj import WARC_SUFFIXES, cdxj_path_for, index_warc, sort_cdxj_file, write_cdxj
from .records import PageRecords, Serialized
from .verify import truncate_to_last_good

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"


def iipc_name(
    prefix: str, serial: int, gzip: bool, moment: datetime | None = None, pid: int | None = None
) -> str:
    """``PREFIX-TIMESTAMP-SERIAL-HOST-PID.warc.gz`` (timestamp to the millisecond, UTC); PID is
    the crawl's, which may not be the process writing the file."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    stamp = moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"
    host = "".join(c if c.isalnum() or c in ".-" else "-" for c in socket.gethostname()) or "host"
    extension = ".warc.gz" if gzip else ".warc"
    return f"{prefix}-{stamp}-{serial:05d}-{host}-{pid or os.getpid()}{extension}"


class WarcFile:
    """One WARC file being written (named ``NAME.open`` until `close`), with its CDXJ lines
    appended to ``NAME.cdxj.open`` as it goes when `cdxj` is on."""

    def __init__(self, folder: Path, name: str, cdxj: bool = True) -> None:
        self.folder = folder
        self.name = name
        self.final_path = folder / name
        self.path = folder / (name + OPEN_SUFFIX)
        if self.final_path.exists():
            raise FileExistsError(self.final_path)
        # 'xb': created here or not at all; unbuffered so a write reaches the OS at once.
        self._handle = open(self.path, "xb", buffering=0)  # noqa: SIM115 - kept open across calls
        self.cdxj_path = cdxj_path_for(self.final_path)
        self.lines_path = self.cdxj_path.with_name(self.cdxj_path.name + OPEN_SUFFIX)
        self._lines: io.FileIO | None = None
        if cdxj:
            self.lines_path.unlink(missing_ok=True)  # a crashed run's, for a file that was never written
            self._lines = open(self.lines_path, "xb", buffering=0)  # noqa: SIM115
        self.size = 0
        self.lines_size = 0
        self.records = 0

    def append(self, records: tuple[Serialized, ...], fsync: bool = False) -> None:
        """Append `records` (and their CDXJ lines) with one write each; on failure cut
        both files back and re-raise."""
        start = self.size
        data = b"".join(r.data for r in records)
        lines = self._cdxj_lines(records, start) if self._lines is not None else b""
        try:
            _write_all(self._handle, data)
            if lines:
                assert self._lines is not None
                _write_all(self._lines, lines)
            if fsync:
                os.fsync(self._handle.fileno())
        except BaseException:
            self._rollback(start)
            raise
        self.size = start + len(data)
        self.lines_size += len(lines)
        self.records += len(records)

    def _cdxj_lines(self, records: tuple[Serialized, ...], offset: int) -> bytes:
        lines = []
        for record in records:
            if record.index is not None:
                capture = Capture(
                    url=record.index.url,
                    timestamp=record.index.timestamp,
                    status=record.index.status,
                    mime=record.index.mime,
                    digest=record.index.digest,
                    length=len(record.data),
                    offset=offset,
                    filename=self.name,
                )
                lines.append(capture.to_cdxj() + "\n")
            offset += len(record.data)
        return "".join(lines).encode("utf-8")

    def _rollback(self, start: int) -> None:
        try:
            os.ftruncate(self._handle.fileno(), start)
            self._handle.seek(start)
        except OSError:
            log.exception("could not cut %s back to %d bytes", self.path, start)
        if self._lines is not None:
            try:
                os.ftruncate(self._lines.fileno(), self.lines_size)
                self._lines.seek(self.lines_size)
            except OSError:
                log.exception("could not cut %s back to %d bytes", self.lines_path, self.lines_size)

    def discard(self) -> None:
        """Remove a file that never got a whole record (its warcinfo write failed)."""
        self._handle.close()
        self.path.unlink()
        if self._lines is not None:
            self._lines.close()
            self.lines_path.unlink(missing_ok=True)

    def close(self) -> Path:
        """Flush, drop the ``.open`` suffix, sort the CDXJ lines; return the final path."""
        with contextlib.suppress(OSError):
            os.fsync(self._handle.fileno())
        self._handle.close()
        if self._lines is not None:
            self._lines.close()
        finish(self.path, self.final_path)
        if self._lines is not None:
            sort_cdxj_file(self.lines_path, self.cdxj_path)
            self.lines_path.unlink()
        return self.final_path


def _write_all(handle: io.FileIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = handle.write(view)
        if written is None or written <= 0:
            raise OSError("short write")
        view = view[written:]


def finish(open_path: Path, final_path: Path) -> None:
    """Rename without ever replacing an existing file (link, then unlink)."""
    os.link(open_path, final_path)
    open_path.unlink()


def recover_open_files(folder: Path, cdxj: bool = True) -> list[tuple[Path, int]]:
    """Close ``.open`` files a crashed run left: cut each back to its last whole record,
    drop the suffix and index it.  Returns (final path, bytes cut) per file.

    Their ``.cdxj.open`` line files are dropped (the WARC file is reindexed instead:
    the lines may lag behind it); so is one left by a crash during a close, after
    indexing its closed WARC file if that has no CDXJ yet.
    """
    recovered = []
    for path in sorted(folder.glob("*" + OPEN_SUFFIX)):
        if not path.name.endswith(WARC_SUFFIXES):
            continue
        final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
        if final.exists():
            log.warning("leaving %s alone: %s already exists", path, final.name)
            continue
        cut = truncate_to_last_good(path)
        if cut:
            log.warning("%s: cut %d bytes of an unfinished record", path.name, cut)
        finish(path, final)
        if cdxj:
            write_cdxj(cdxj_path_for(final), index_warc(final))
        recovered.append((final, cut))
    for lines in sorted(folder.glob("*.cdxj" + OPEN_SUFFIX)):
        index = lines.with_name(lines.name[: -len(OPEN_SUFFIX)])
        stem = index.name[: -len(".cdxj")]
        if any((folder / (stem + s)).exists() for s in (".warc.gz.open", ".warc.open")):
            continue  # its WARC file was left alone above
        for suffix in (".warc.gz", ".warc"):
            warc = folder / (stem + suffix)
            if warc.exists() and not index.exists() and cdxj:
                write_cdxj(index, index_warc(warc))
        lines.unlink()
    return recovered


class Rotator:
    """The current file of a crawl, rotated at `max_size`, each starting with warcinfo."""

    def __init__(
        self,
        folder: Path,
        prefix: str,
        max_size: int,
        gzip: bool,
        warcinfo: Callable[[str], Serialized],
        cdxj: bool = True,
        fsync: bool = False,
        on_close: Callable[[str], None] | None = None,
        pid: int | None = None,
    ) -> None:
        self.folder = folder
        self.pid = pid
        self.on_close = on_close
        self.prefix = prefix
        self.max_size = max_size
        self.gzip = gzip
        self.warcinfo = warcinfo
        self.cdxj = cdxj
        self.fsync = fsync
        self.serial = 0
        self.current: WarcFile | None = None
        self.closed: list[Path] = []

    def write(self, page: PageRecords) -> WarcFile:
        """Append one page's records, rotating first when the file would grow too big."""
        files = self.write_many([page])
        return files[0]

    def write_many(self, pages: Sequence[PageRecords], done: list[WarcFile] | None = None) -> list[WarcFile]:
        """Append pages in order with one write per file they go to (rotating as `write`
        would for each page); returns the file of each page.

        A failed write cuts its file back to where it stood before that write and raises:
        `done` then holds the files of the pages written before it, which stay written.
        """
        done = [] if done is None else done
        start = 0
        while start < len(pages):
            current = self._file_for(pages[start])
            size = current.size + pages[start].size
            end = start + 1
            while end < len(pages) and size + pages[end].size <= self.max_size:
                size += pages[end].size
                end += 1
            group = pages[start:end]
            current.append(tuple(record for page in group for record in page.records), self.fsync)
            done.extend([current] * len(group))
            start = end
        return done

    def _file_for(self, page: PageRecords) -> WarcFile:
        """The file `page` goes to: the current one, or a new one when it would grow too big."""
        current = self.current
        if current is not None:
            full = current.records > 1 and current.size + page.size > self.max_size
            if full or current.records == 0:
                self.close()
                current = None
        if current is None:
            current = self._open()
        return current

    def _open(self) -> WarcFile:
        while True:
            name = iipc_name(self.prefix, self.serial, self.gzip, pid=self.pid)
            self.serial += 1
            try:
                warc = WarcFile(self.folder, name, cdxj=self.cdxj)
            except FileExistsError:
                continue
            break
        try:
            warc.append((self.warcinfo(name),), self.fsync)
        except BaseException:
            self.current = warc
            raise
        self.current = warc
        return warc

    def close(self) -> None:
        if self.current is not None:
            current, self.current = self.current, None
            if current.records == 0:
                current.discard()
            else:
                self.closed.append(current.close())
                if self.on_close is not None:
                    self.on_close(current.name)
