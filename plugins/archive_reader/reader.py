"""Find and read archived responses: the API the export, the web UI and reindexing use.

    archive = open_archive(Path("ARCHIVE"))
    capture = archive.lookup("https://example.com/", timestamp="20240101000000")
    if capture is not None:
        response = archive.read(capture)
        html = response.content()            # Content-Encoding undone, size-capped

Look-ups go through the CDXJ files beside the WARC files (written when a WARC file is
closed) and fall back to scanning any WARC file that has none, ``.open`` files of a
crawl in progress included, so an archive whose crawl was killed is still readable.
URLs are matched by SURT key, as pywb does: ``http://www.Example.com/a/`` finds
``http://example.com/a``.  All methods are blocking; call them from a thread
(``asyncio.to_thread``) inside an event loop.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from archiver.api import ArchiveError, Decoded, decode_content, find_header, warc_folder

from .capture import Capture, parse_status
from .cdxj import (
    WARC_SUFFIXES,
    Report,
    captures_in_open_lines,
    captures_in_sorted_lines,
    cdxj_path_for,
    has_lines,
    index_warc,
    read_cdxj,
)
from .digests import digest_key
from .members import DEFAULT_LIMITS, Member, ReadLimits, RecordError, parse_record, read_member
from .payload import as_served
from .surt import surt

__all__ = [
    "Capture",
    "MissingOriginal",
    "ReadLimits",
    "RecordError",
    "StoredResponse",
    "WarcArchive",
    "open_archive",
]

DEFAULT_CONTENT_CAP = DEFAULT_LIMITS.max_decoded_size
_OPEN = ".open"
_LINES = ".cdxj"
_LINES_OPEN = ".cdxj.open"
_WARC_WRITTEN = (".warc.gz", ".warc", ".warc.gz.open", ".warc.open")
"""The WARC files a crawl or an import writes, whose captures `captures_in_files` finds."""


def resolve_warc(folder: Path, name: str) -> Path:
    """`folder`/`name` for a WARC file name taken from an index; never a path outside `folder`.

    An index line is data like any other: a name with a folder in it (``../x``, ``/etc``)
    or that is not a WARC file name is refused instead of followed.
    """
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or not name.endswith(WARC_SUFFIXES)
    ):
        raise ArchiveError(f"{folder}: the index names {name!r}, which is not a WARC file in this folder")
    return folder / name


class MissingOriginal(ArchiveError):
    """A revisit whose original (the record holding its payload) the archive lacks."""

    def __init__(self, capture: Capture) -> None:
        super().__init__(
            f"{capture.url}: revisit of payload {capture.digest} whose original is not in the archive"
        )
        self.capture = capture


@dataclass(frozen=True)
class StoredResponse:
    """One archived HTTP response, as stored.

    `payload` is the entity body exactly as the server sent it (Content-Encoding kept,
    chunked transfer coding removed, also from a record that stored it chunked);
    `headers` are the response headers in their original order, duplicates included,
    without ``Transfer-Encoding: chunked`` and without a ``Content-Encoding`` the stored
    body is plainly not in (a tool stored it decoded).  A ``resource`` record's
    `headers` are its own Content-Type and `status` is None.  For a revisit, `status` and `headers` are the
    revisit's own (for a server-not-modified revisit, whose own are a 304's, the
    original's) and `payload` is the original's (found by payload digest);
    `revisit_of` is then the original's capture.  `truncated` is the record's
    WARC-Truncated value ('length', 'time', 'disconnect'), None for a whole body.
    """

    capture: Capture
    url: str
    status: int | None
    reason: str
    headers: list[tuple[str, str]]
    payload: bytes
    record_id: str
    date: str
    truncated: str | None = None
    revisit_of: Capture | None = None
    limits: ReadLimits = DEFAULT_LIMITS

    def header(self, name: str, default: str | None = None) -> str | None:
        """First header called `name` (case-insensitive)."""
        return find_header(self.headers, name, default)

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-cased; '' when absent."""
        return (self.header("Content-Type") or "").split(";", 1)[0].strip().lower()

    def content(self, max_size: int = DEFAULT_CONTENT_CAP) -> bytes:
        """`payload` with its Content-Encoding undone, at most `max_size` bytes.

        Raises ``ArchiveError`` when the decoded body would exceed `max_size` (and the
        crawl's size and ratio caps), the encoding is unknown or the stored body is
        corrupt: a hostile archived body cannot exhaust memory through the reader.
        """
        decoded = self._decoded(max_size, prefix=False)
        return decoded.content

    def content_prefix(self, max_size: int) -> tuple[bytes, bool]:
        """The first `max_size` bytes of `content` (fewer at the ratio cap) and whether the body
        went on: for a reader of the start of a page, whose memory must not grow with the page."""
        decoded = self._decoded(max_size, prefix=True)
        return decoded.content, decoded.cut

    def _decoded(self, max_size: int, *, prefix: bool) -> Decoded:
        limits = self.limits
        decoded = decode_content(
            self.payload,
            self.header("Content-Encoding"),
            min(max_size, limits.max_decoded_size),
            max_ratio=limits.max_decompression_ratio,
            prefix=prefix,
        )
        if decoded.error:
            raise ArchiveError(f"{self.url}: {decoded.error}")
        return decoded


@dataclass
class _FileIndex:
    stamp: tuple[int, int, str]
    captures: list[Capture]
    problems: list[str]


@dataclass
class WarcArchive:
    """The WARC files of one archive and their combined index.

    The index is loaded on first use and reloaded by `refresh()` (files that did not
    change are not read again), so a long-lived reader can follow a running crawl.
    """

    folder: Path
    only: tuple[str, ...] = ()
    limits: ReadLimits = DEFAULT_LIMITS
    _files: dict[str, _FileIndex] = field(default_factory=dict, repr=False)
    _sorted: list[tuple[str, str, int]] | None = field(default=None, repr=False)
    _all: list[Capture] = field(default_factory=list, repr=False)
    _by_digest: dict[str, Capture] = field(default_factory=dict, repr=False)

    # -- index ---------------------------------------------------------------

    def warc_files(self) -> list[Path]:
        """The WARC (and ARC) files, finished and in progress, sorted by name (= by time)."""
        if self.only:
            return [self.folder / name for name in self.only]
        names = [p for p in self.folder.iterdir() if p.is_file() and p.name.endswith(WARC_SUFFIXES)]
        return sorted(names, key=lambda p: p.name)

    def refresh(self) -> None:
        """Re-read the index of every WARC file that changed since the last look."""
        seen: dict[str, _FileIndex] = {}
        for path in self.warc_files():
            cdxj = cdxj_path_for(path)
            use_cdxj = not path.name.endswith(_OPEN) and cdxj.is_file()
            source = cdxj if use_cdxj else path
            try:
                stat = source.stat()
            except FileNotFoundError:  # renamed from .open while we looked
                continue
            if use_cdxj and stat.st_size == 0 and path.stat().st_size > 0:
                source, use_cdxj = path, False  # an emptied index hides a WARC file: read the file
                stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size, source.name)
            known = self._files.get(path.name)
            if known is not None and known.stamp == stamp:
                seen[path.name] = known
                continue
            problems: list[str] = []
            report = problems.append
            captures = (
                [c for c in read_cdxj(cdxj, report) if self._names_file(c, path, report)]
                if use_cdxj
                else list(index_warc(path, limits=self.limits, report=report))
            )
            seen[path.name] = _FileIndex(stamp, captures, problems)
        self._files = seen
        self._all = [c for index in seen.values() for c in index.captures]
        self._sorted = sorted((c.urlkey, c.timestamp, position) for position, c in enumerate(self._all))
        self._by_digest = {}
        for capture in self._all:
            key = digest_key(capture.digest)
            if key and not capture.is_revisit:
                self._by_digest.setdefault(key, capture)

    @property
    def problems(self) -> list[str]:
        """One line (file, offset or line, why) per index line or record the index had to skip."""
        self._index()
        return [problem for index in self._files.values() for problem in index.problems]

    def _names_file(self, capture: Capture, path: Path, report: Report) -> bool:
        try:
            resolve_warc(self.folder, capture.filename)
        except ArchiveError as exc:
            report(f"{cdxj_path_for(path)}: {capture.url}: {exc}")
            return False
        return True

    def _index(self) -> list[tuple[str, str, int]]:
        if self._sorted is None:
            self.refresh()
        assert self._sorted is not None
        return self._sorted

    def iter_captures(self) -> Iterator[Capture]:
        """Every capture (response, revisit, resource record) of the archive, file by file in file order."""
        self._index()
        for index in self._files.values():
            yield from sorted(index.captures, key=lambda c: c.offset)

    def captures(self, url: str) -> list[Capture]:
        """Every capture of `url` (matched by SURT key), oldest first."""
        entries = self._index()
        key = surt(url)
        start = bisect.bisect_left(entries, (key, "", -1))
        found: list[Capture] = []
        for entry_key, _timestamp, position in entries[start:]:
            if entry_key != key:
                break
            found.append(self._all[position])
        return found

    def captures_in_files(self, url: str) -> list[Capture]:
        """Every capture of `url` read from the CDXJ files themselves, for a few look-ups
        without loading the whole index: by binary search in each sorted ``.cdxj`` file, by a
        scan of the lines of a file still being written (``.cdxj.open``); only a WARC file
        with no lines beside it (imported so) is looked up through the index."""
        key = surt(url)
        found: list[Capture] = []
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return []
        for name in names:
            path = self.folder / name
            if name.endswith(_LINES_OPEN):
                found += captures_in_open_lines(path, key)
            elif name.endswith(_LINES):
                found += captures_in_sorted_lines(path, key)
            elif name.endswith(_WARC_WRITTEN) and not has_lines(path):
                found += [c for c in self.captures(url) if c.filename == name]
        return found

    def captures_of_query_variants(self, url: str, limit: int) -> list[Capture]:
        """Up to `limit` captures of `url`'s path with any query, or none (SURT key order).

        For the replay's fuzzy match: ``/search.html?q=x`` finds ``/search.html`` and
        ``/search.html?q=y``, not ``/search.html/more``.
        """
        entries = self._index()
        base = surt(url).split("?", 1)[0]
        found: list[Capture] = []
        for prefix, exact in ((base, True), (base + "?", False)):
            start = bisect.bisect_left(entries, (prefix, "", -1))
            for entry_key, _timestamp, position in entries[start:]:
                if (entry_key != prefix) if exact else not entry_key.startswith(prefix):
                    break
                if len(found) >= limit:
                    return found
                found.append(self._all[position])
        return found

    def lookup(self, url: str, timestamp: str | None = None) -> Capture | None:
        """The latest capture of `url`, or the one nearest to `timestamp` (14 digits).

        Among equally near captures the later one wins.  None when `url` was never
        captured.  Revisits are returned as they are; `read` resolves them.
        """
        found = self.captures(url)
        if not found:
            return None
        if timestamp is None:
            return found[-1]
        wanted = _seconds(timestamp)
        return min(reversed(found), key=lambda c: abs(_seconds(c.timestamp) - wanted))

    # -- records -------------------------------------------------------------

    def path_of(self, capture: Capture) -> Path:
        """The file holding `capture`, also after its ``.open`` suffix was dropped."""
        path = resolve_warc(self.folder, capture.filename)
        if path.exists():
            return path
        if path.name.endswith(_OPEN):
            closed = path.with_name(path.name[: -len(_OPEN)])
            if closed.exists():
                return closed
        else:
            still_open = path.with_name(path.name + _OPEN)
            if still_open.exists():
                return still_open
        raise ArchiveError(f"WARC file not found: {path}")

    def read(self, capture: Capture) -> StoredResponse:
        """The stored response of `capture`; a revisit gets its original's payload."""
        response = self._read_record(capture)
        if not capture.is_revisit:
            return response
        original = self._original_of(capture)
        if original is None:
            raise MissingOriginal(capture)
        stored = self._read_record(original)
        if response.status == 304:  # server-not-modified: the original's response stands
            response = dataclasses.replace(
                response, status=stored.status, reason=stored.reason, headers=stored.headers
            )
        headers, payload = as_served(response.headers, stored.payload)
        return StoredResponse(
            capture=capture,
            url=response.url,
            status=response.status,
            reason=response.reason,
            headers=headers,
            payload=payload,
            record_id=response.record_id,
            date=response.date,
            truncated=stored.truncated,
            revisit_of=original,
            limits=self.limits,
        )

    def _original_of(self, capture: Capture) -> Capture | None:
        self._index()
        key = digest_key(capture.digest)
        return self._by_digest.get(key) if key else None

    def read_member_of(self, capture: Capture) -> tuple[Path, Member]:
        """The gzip member (or plain record) of `capture` and the file it was read from."""
        path = self.path_of(capture)
        try:
            handle = path.open("rb")
        except FileNotFoundError:  # its ``.open`` suffix dropped between the look and the open
            path = self.path_of(capture)
            handle = path.open("rb")
        with handle:
            return path, read_member(handle, capture.offset, self.limits)

    def _read_record(self, capture: Capture) -> StoredResponse:
        path, member = self.read_member_of(capture)
        return self.response_of(capture, path, member)

    def response_of(self, capture: Capture, path: Path, member: Member) -> StoredResponse:
        """The stored response in `member`, the record of `capture` read from `path`."""
        if member.problem:
            raise RecordError(path, capture.offset, member.problem)
        record = parse_record(member, path)
        payload = record.raw_stream.read()
        http = record.http_headers
        rec = record.rec_headers
        status = parse_status(http.get_statuscode()) if http else None
        reason = http.statusline.split(" ", 1)[1] if http and " " in http.statusline else ""
        headers = [(str(k), str(v)) for k, v in (http.headers if http else [])]
        if http:
            headers, payload = as_served(headers, payload)
        elif record.rec_type == "resource" and rec.get_header("Content-Type"):
            headers = [("Content-Type", rec.get_header("Content-Type"))]
        return StoredResponse(
            capture=capture,
            url=rec.get_header("WARC-Target-URI") or capture.url,
            status=status,
            reason=reason,
            headers=headers,
            payload=payload if record.rec_type != "revisit" else b"",
            record_id=rec.get_header("WARC-Record-ID") or "",
            date=rec.get_header("WARC-Date") or "",
            truncated=rec.get_header("WARC-Truncated"),
            limits=self.limits,
        )


def _seconds(timestamp: str) -> float:
    digits = timestamp[:14] + "19700101000000"[len(timestamp[:14]) :]
    try:
        moment = datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ArchiveError(f"not a 14-digit timestamp: {timestamp!r}") from exc
    return moment.timestamp()


def open_archive(path: Path | str, limits: ReadLimits | None = None) -> WarcArchive:
    """Open the WARC files of an archive for look-ups.

    `path` is an archive folder (its ``warc/`` subfolder is used), a folder of WARC
    files, or one WARC file.  Records are read within `limits`, by default the caps of
    the crawl that wrote the archive.  Raises ``ArchiveError`` when there is nothing to open.
    """
    path = Path(path)
    if path.is_dir():
        folder = warc_folder(path)
        return WarcArchive(folder, limits=limits or ReadLimits.for_archive(folder))
    if path.is_file():
        chosen = limits or ReadLimits.for_archive(path.parent)
        return WarcArchive(path.parent, only=(path.name,), limits=chosen)
    raise ArchiveError(f"no archive at {path}")
