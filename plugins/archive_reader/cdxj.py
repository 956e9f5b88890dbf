"""CDXJ index files: one sorted line per capture (response, revisit, resource record), beside each WARC file.

The lines are the ones ``cdxj-indexer`` writes and pywb reads::

    com,example)/a 20240101120000 {"url": "...", "mime": "text/html", "status": "200",
    "digest": "sha1:...", "length": "1234", "offset": "0", "filename": "x.warc.gz"}

The writer appends each record's line to ``NAME.cdxj.open`` as it writes the record (no
second pass over the file, no index held in memory) and sorts that file into
``NAME.cdxj`` when the WARC file is closed (`sort_cdxj_file`, in bounded chunks);
`index_warc` rebuilds the lines from a WARC file for archives that lack them.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from warcio.timeutils import iso_date_to_timestamp

from .capture import REVISIT_MIME, Capture, parse_status
from .members import DEFAULT_LIMITS, Member, ReadLimits, RecordError, iter_members, parse_record
from .suffixes import READ_NAMES

Report = Callable[[str], None]

INDEXED_TYPES = ("response", "revisit", "resource")
"""The records that are captures: a replay answers with one of them.  A ``metadata`` or
``request`` record (Heritrix writes one with the URL and second of each response) never
is, or it would shadow the response it describes."""
_MIME_END = re.compile(r"[;\s]")
WARC_SUFFIXES = READ_NAMES


def cdxj_path_for(warc_path: Path) -> Path:
    """``NAME.warc.gz`` (or ``NAME.arc.gz``...) -> ``NAME.cdxj`` in the same folder."""
    name = warc_path.name
    for suffix in WARC_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return warc_path.with_name(name + ".cdxj")


def clean_mime(value: str | None) -> str | None:
    """Media type as CDXJ stores it: the Content-Type up to the first ';' or space."""
    if not value:
        return value
    return _MIME_END.split(value, 1)[0].strip()


def sort_lines(captures: Iterable[Capture]) -> list[str]:
    return sorted(capture.to_cdxj() + "\n" for capture in captures)


def write_cdxj(path: Path, captures: Iterable[Capture]) -> None:
    """Write a sorted CDXJ file atomically (a reader never sees half of one)."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        handle.writelines(sort_lines(captures))
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)


SORT_CHUNK_BYTES = 8 * 1024 * 1024
"""Lines sorted in memory at once when a CDXJ file is sorted; larger files are merged from runs."""


def sort_cdxj_file(source: Path, target: Path, chunk_bytes: int = SORT_CHUNK_BYTES) -> None:
    """Sort the unsorted CDXJ lines of `source` into `target`, atomically, in bounded memory.

    Lines are sorted as bytes: UTF-8 byte order is code point order, so the result is the
    one `sort_lines` gives.  A file larger than `chunk_bytes` is cut into sorted runs
    beside `target` and merged, so closing a large WARC file costs no more memory than a
    small one.
    """
    partial = target.with_name(target.name + ".partial")
    runs: list[Path] = []
    try:
        with source.open("rb") as handle:
            while True:
                chunk = handle.readlines(chunk_bytes)
                if not chunk:
                    break
                chunk.sort()
                if not runs and not handle.peek(1):
                    _write_lines(partial, chunk)
                    break
                run = target.with_name(f"{target.name}.run{len(runs)}")
                _write_lines(run, chunk, sync=False)
                runs.append(run)
        if runs:
            with contextlib.ExitStack() as stack:
                handles = [stack.enter_context(run.open("rb")) for run in runs]
                _write_lines(partial, heapq.merge(*handles))
        elif not partial.exists():
            _write_lines(partial, [])
        partial.replace(target)
    finally:
        for run in runs:
            run.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)


def _write_lines(path: Path, lines: Iterable[bytes], sync: bool = True) -> None:
    with path.open("wb") as out:
        out.writelines(lines)
        if sync:
            out.flush()
            os.fsync(out.fileno())


def read_cdxj(path: Path, report: Report | None = None) -> Iterator[Capture]:
    """Captures of a CDXJ file, skipping blank lines and comment/header lines.

    A line that is not a CDXJ line is passed to `report` (file, line number, why) and
    skipped; without `report` it raises ValueError.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
                if not line.strip() or line.startswith(("!", " ")):
                    continue
                yield Capture.from_cdxj(line)
            except (ValueError, KeyError, TypeError) as exc:
                if report is None:
                    raise ValueError(f"{path}: line {number}: not a CDXJ line ({exc})") from exc
                report(f"{path}: line {number}: not a CDXJ line, skipped ({type(exc).__name__}: {exc})")


def index_warc(
    path: Path,
    filename: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    report: Report | None = None,
) -> Iterator[Capture]:
    """Captures of every indexable record of a WARC file, in file order.

    A record that cannot be read is passed to `report` (file, offset, why) and skipped;
    reading stops at a damaged tail, which is not reported for a file still being
    written (``.open``: it ends mid-record).  `verify.verify_file` checks a file in full.
    """
    name = filename if filename is not None else path.name
    with path.open("rb") as handle:
        for member in iter_members(handle, limits):
            if member.problem:
                if report is not None and not (path.name.endswith(".open") and member.fatal):
                    report(f"{path}: offset {member.offset}: {member.problem}")
                continue
            try:
                record = parse_record(member, path)
            except RecordError as exc:
                if report is not None:
                    report(str(exc))
                continue
            if record.rec_type not in INDEXED_TYPES:
                continue
            content_type = record.rec_headers.get_header("Content-Type")
            if record.rec_type == "resource" and content_type == "application/warc-fields":
                continue
            capture = _capture(record, member, name)
            if capture is not None:
                yield capture


def _capture(record: Any, member: Member, filename: str) -> Capture | None:
    rec_headers = record.rec_headers
    rec_type: str = record.rec_type
    http_headers = record.http_headers
    url = rec_headers.get_header("WARC-Target-URI")
    date = rec_headers.get_header("WARC-Date")
    if not url or not date:
        return None
    if rec_type == "revisit":
        mime: str | None = REVISIT_MIME
    elif rec_type == "response":
        mime = clean_mime(http_headers.get_header("Content-Type") if http_headers else None)
    else:
        mime = clean_mime(rec_headers.get_header("Content-Type"))
    status = None
    if rec_type in ("response", "revisit") and http_headers:
        status = parse_status(http_headers.get_statuscode())
    digest = rec_headers.get_header("WARC-Payload-Digest")
    try:
        timestamp = iso_date_to_timestamp(date)
    except ValueError:
        return None
    return Capture(
        url=url,
        timestamp=timestamp,
        status=status,
        mime=mime,
        digest=digest,
        length=member.length,
        offset=member.offset,
        filename=filename,
    )


def has_lines(warc: Path) -> bool:
    """Whether `warc` has CDXJ lines beside it, sorted or still being written."""
    cdxj = cdxj_path_for(warc)
    return cdxj.exists() or cdxj.with_name(cdxj.name + ".open").exists()


def _captures_of(key: str, lines: Any) -> list[Capture]:
    prefix = (key + " ").encode("utf-8")
    found = []
    for line in lines:
        if line.startswith(prefix):
            try:
                found.append(Capture.from_cdxj(line.decode("utf-8")))
            except (ValueError, KeyError, TypeError):
                continue
    return found


def captures_in_open_lines(path: Path, key: str) -> list[Capture]:
    """The lines of `key` in an unsorted CDXJ file (a WARC file still being written)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    needle = (key + " ").encode("utf-8")
    lines = []
    start = data.find(needle)
    while start >= 0:
        if start == 0 or data[start - 1 : start] == b"\n":
            end = data.find(b"\n", start)
            lines.append(data[start : end if end >= 0 else len(data)])
        start = data.find(needle, start + 1)
    return _captures_of(key, lines)


def captures_in_sorted_lines(path: Path, key: str) -> list[Capture]:
    """The lines of `key` in a sorted CDXJ file, found by binary search over its bytes."""
    wanted = (key + " ").encode("utf-8")
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            low, high = 0, size
            while low < high:  # the first line start at or after `middle` whose key >= wanted
                middle = (low + high) // 2
                line_start, line = _line_after(handle, middle)
                if line is None or line[: len(wanted)] >= wanted:
                    high = middle
                else:
                    low = line_start + len(line)
            handle.seek(_line_after(handle, low)[0])
            lines = []
            for line in handle:
                if not line.startswith(wanted):
                    break
                lines.append(line)
    except OSError:
        return []
    return _captures_of(key, lines)


def _line_after(handle: BinaryIO, offset: int) -> tuple[int, bytes | None]:
    """(start, bytes) of the first line starting at or after `offset` (None past the end)."""
    if offset == 0:
        handle.seek(0)
    else:
        handle.seek(offset - 1)
        handle.readline()  # the rest of the line `offset` falls in (or just its newline)
    start = handle.tell()
    line = handle.readline()
    return start, line or None
