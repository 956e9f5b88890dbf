"""WARC, ARC and WACZ files made by other tools (wget, Heritrix, Browsertrix...) brought into an archive.

`archiver reindex --warc FILE... -o ARCHIVE` indexes them for search; the archive must also
hold them, with their CDXJ, or a search hit would lead nowhere: `serve`, `export` and
`warc check` read ``ARCHIVE/warc/``.  Each file goes there under its own name, copied
(the default: the archive stands alone), hard-linked (no extra space, same file system)
or symlinked (no extra space, but the archive breaks if the original moves).  A file the
archive already holds with the same bytes is kept as it is, so importing again is safe.

Two kinds of file are not placed as they are:

* a gzip file that is one stream over all its records (not one member per record) is
  recompressed, one member per record, the records' bytes unchanged: no reader could
  find a record of it by its offset;
* a WACZ file is unpacked: each WARC file of its ``archive/`` folder becomes
  ``WACZNAME-WARCNAME`` (recompressed when it needs to be).  Its CDXJ index is rebuilt from
  those files rather than trusted, and its ``pages.jsonl`` is kept beside them as
  ``WACZNAME.pages.jsonl``.

ARC files (``.arc``, ``.arc.gz``) are kept as ARC and read in place, as warcio and pywb
read them: the file stays the one the other tool wrote, byte for byte.
"""

from __future__ import annotations

import contextlib
import filecmp
import gzip
import logging
import os
import shutil
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from archiver.api import WARC_FOLDER, ArchiveError, UsageError

from .cdxj import cdxj_path_for, index_warc, write_cdxj
from .members import DEFAULT_LIMITS, is_gzip, is_one_stream, split_stream
from .suffixes import IMPORT_NAMES, STORED_NAMES, WACZ_NAME

__all__ = ["LINK_MODES", "import_warcs"]

log = logging.getLogger(__name__)

LinkMode = Literal["copy", "hard", "symlink"]
LINK_MODES: tuple[LinkMode, ...] = ("copy", "hard", "symlink")
_COPY_CHUNK = 1024 * 1024
_LEVEL = 6
MAX_ZIP_RATIO = 100
"""How many times its compressed size a WACZ member may unpack to.  Its WARC files are gzip
already and stored (about 1:1); a plain WARC file deflates to a tenth at best.  Deflate goes
up to 1:1032: a 2 MB WACZ could otherwise write 2 GB, and `serve` unpacks into /tmp."""
MAX_PAGES_LIST = 64 * 1024 * 1024
"""The largest ``pages/pages.jsonl`` kept: its titles are read into memory for search."""


@dataclass(frozen=True)
class _Placement:
    """One file the archive gets: its name there and how its bytes are made."""

    source: Path
    name: str
    open_source: Callable[[], contextlib.AbstractContextManager[BinaryIO]]
    whole_file: bool
    """The bytes are `source`'s own (so it may be linked instead of copied)."""


def import_warcs(sources: Sequence[Path], archive: Path, link: LinkMode = "copy") -> list[Path]:
    """Place `sources` in ``archive/warc/`` with a CDXJ index each; returns the placed paths."""
    folder = archive / WARC_FOLDER
    placements: list[_Placement] = []
    for source in sources:
        if not source.is_file():
            raise UsageError(f"not a WARC file: {source}")
        if not source.name.endswith(IMPORT_NAMES):
            raise UsageError(f"{source}: a WARC file's name ends in .warc.gz, .warc, .arc.gz, .arc or .wacz")
        placements += _wacz_placements(source) if source.name.endswith(WACZ_NAME) else [_file(source)]
    names: set[str] = set()
    indexes: set[str] = set()
    for placement in placements:
        index = cdxj_path_for(folder / placement.name).name
        if placement.name in names or index in indexes:
            raise UsageError(
                f"two WARC files would be named {placement.name} (or share its index): rename one"
            )
        names.add(placement.name)
        indexes.add(index)
    folder.mkdir(parents=True, exist_ok=True)
    placed = []
    for placement in placements:
        target = folder / placement.name
        _place(placement, target, link)
        write_cdxj(cdxj_path_for(target), index_warc(target))
        placed.append(target)
    for source in sources:
        if source.name.endswith(WACZ_NAME):
            _keep_pages(source, folder)
    return placed


def _file(source: Path) -> _Placement:
    def opener() -> contextlib.AbstractContextManager[BinaryIO]:
        return source.open("rb")

    return _Placement(source, source.name, opener, whole_file=True)


def _wacz_placements(source: Path) -> list[_Placement]:
    """The WARC files of a WACZ (its ``archive/`` folder), each opened from the zip."""
    try:
        with zipfile.ZipFile(source) as wacz:
            infos = [info for info in wacz.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{source}: not a readable WACZ file ({exc})") from None
    found: list[_Placement] = []
    stem = source.name[: -len(WACZ_NAME)]
    for info in infos:
        entry = info.filename
        parts = PurePosixPath(entry).parts
        if len(parts) != 2 or parts[0] != "archive" or not parts[1].endswith(STORED_NAMES):
            continue
        if parts[1].startswith(".") or "\\" in parts[1] or "\0" in parts[1]:
            continue  # not a name a WARC file of this archive can have
        bomb = _bomb_words(info)
        if bomb is not None:
            raise UsageError(f"{source}: {entry} {bomb}: not a WACZ file this archive reads")

        def opener(entry: str = entry) -> contextlib.AbstractContextManager[BinaryIO]:
            return _zip_entry(source, entry)

        found.append(_Placement(source, f"{stem}-{parts[1]}", opener, whole_file=False))
    if not found:
        raise UsageError(f"{source}: no WARC files in its archive/ folder: not a WACZ file")
    return found


@contextlib.contextmanager
def _zip_entry(source: Path, entry: str) -> Iterator[BinaryIO]:
    with zipfile.ZipFile(source) as wacz, wacz.open(entry) as stream:
        yield stream  # type: ignore[misc]


def _bomb_words(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member unpacks to more than `MAX_ZIP_RATIO` times its size, or None.

    The sizes are the zip's own: `zipfile` never reads a member past the size it declares."""
    if info.file_size <= max(info.compress_size, 1) * MAX_ZIP_RATIO:
        return None
    return (
        f"unpacks {info.compress_size:,} bytes to {info.file_size:,} (over {MAX_ZIP_RATIO} times: a zip bomb)"
    )


def _keep_pages(source: Path, folder: Path) -> None:
    """The WACZ's page list (URLs, titles, times) beside its WARC files, when it is of a
    bounded size (one over it is left out with a warning: the pages stay, without titles)."""
    stem = source.name[: -len(WACZ_NAME)]
    with zipfile.ZipFile(source) as wacz:
        if "pages/pages.jsonl" not in wacz.namelist():
            return
        info = wacz.getinfo("pages/pages.jsonl")
        bomb = _bomb_words(info)
        if bomb is not None or info.file_size > MAX_PAGES_LIST:
            why = bomb or f"is {info.file_size:,} bytes, over {MAX_PAGES_LIST:,}"
            log.warning("%s: pages/pages.jsonl %s: its page titles are not kept", source, why)
            return
        partial = folder / f"{stem}.pages.jsonl.partial"
        with wacz.open("pages/pages.jsonl") as stream, partial.open("wb") as out:
            shutil.copyfileobj(stream, out, _COPY_CHUNK)
        partial.replace(folder / f"{stem}.pages.jsonl")


def _place(placement: _Placement, target: Path, link: LinkMode) -> None:
    """Put the file at `target` unless an identical one is there; refuse a different one."""
    partial = target.with_name(target.name + ".partial")
    try:
        with placement.open_source() as stream:
            one_stream = _seekable_gzip(stream) and is_one_stream(stream)
        if placement.whole_file and not one_stream:
            if _holds(target):
                if not _same(placement.source, target):
                    raise UsageError(f"{target.parent.parent} already holds a different {target.name}")
                return
            _put(placement.source, target, link)
            return
        with placement.open_source() as stream, partial.open("wb") as out:
            if one_stream:
                log.warning(
                    "%s: one gzip stream over all records: recompressed, one member per record", target.name
                )
                _recompress(stream, out, placement.name)
            else:
                shutil.copyfileobj(stream, out, _COPY_CHUNK)
        if _holds(target):
            if not filecmp.cmp(partial, target, shallow=False):
                raise UsageError(f"{target.parent.parent} already holds a different {target.name}")
            return
        partial.replace(target)
    except OSError as exc:
        raise ArchiveError(
            f"cannot place {placement.name} in {target.parent}: {exc.strerror or exc}"
        ) from None
    finally:
        partial.unlink(missing_ok=True)


def _seekable_gzip(stream: BinaryIO) -> bool:
    return stream.seekable() and is_gzip(stream)


def _recompress(stream: BinaryIO, out: BinaryIO, name: str) -> None:
    """Each record of the one-stream gzip `stream` as its own gzip member (same bytes inside)."""
    try:
        with gzip.GzipFile(fileobj=stream, mode="rb") as whole:
            for member in split_stream(whole, DEFAULT_LIMITS):  # type: ignore[arg-type]
                if member.problem:
                    raise UsageError(
                        f"{name}: offset {member.offset} of the uncompressed stream: {member.problem}"
                    )
                out.write(zlib.compress(member.data, _LEVEL, zlib.MAX_WBITS | 16))
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise UsageError(f"{name}: corrupt gzip stream ({exc}): nothing imported from it") from None


def _holds(target: Path) -> bool:
    return target.is_file() or target.is_symlink()


def _same(source: Path, target: Path) -> bool:
    try:
        return os.path.samefile(source, target) or filecmp.cmp(source, target, shallow=False)
    except OSError:
        return False


def _put(source: Path, target: Path, link: LinkMode) -> None:
    try:
        if link == "hard":
            os.link(source, target)
        elif link == "symlink":
            target.symlink_to(source.resolve())
        else:
            partial = target.with_name(target.name + ".partial")
            shutil.copyfile(source, partial)
            partial.replace(target)
    except OSError as exc:
        hint = " (a hard link needs the same file system: copy, or --link symlink)" if link == "hard" else ""
        raise UsageError(f"cannot place {source} in {target.parent}: {exc.strerror or exc}{hint}") from None
