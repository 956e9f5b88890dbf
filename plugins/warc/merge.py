"""`archiver merge` for WARC files: the sources' files linked (or copied) into the merged archive,
the files a killed crawl left open closed, a CDXJ beside each and one sorted ``index.cdxj``."""

from __future__ import annotations

import heapq
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

from archiver.api import WARC_FOLDER, ArchiveError, plural

from ..archive_reader.cdxj import WARC_SUFFIXES, cdxj_path_for, index_warc, write_cdxj
from .warcfile import OPEN_SUFFIX, recover_open_files

log = logging.getLogger(__name__)

MERGED_CDXJ = "index.cdxj"


def merge_warcs(archive: Path, sources: Sequence[Path], copy: bool) -> dict[str, int | str]:
    """Gather the WARC files (and their CDXJ files) of `sources` into ``archive/warc``."""
    folder = archive / WARC_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    placed: Counter[str] = Counter(linked=0, copied=0, already=0)
    for source in sources:
        for warc in _warc_files(source / WARC_FOLDER):
            placed[_place(warc, folder / warc.name, copy)] += 1
            cdxj = cdxj_path_for(warc)
            if cdxj.is_file() and not warc.name.endswith(OPEN_SUFFIX):
                _place(cdxj, folder / cdxj.name, copy)
    finish_merged(folder)
    captures = 0
    tmp = archive / (MERGED_CDXJ + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for line in _merged_lines(sorted(folder.glob("*.cdxj"))):
            out.write(line)
            captures += 1
    os.replace(tmp, archive / MERGED_CDXJ)
    summary = (
        f"{plural(placed['linked'], 'WARC file')} linked, {placed['copied']} copied,"
        f" {placed['already']} already there; {plural(captures, 'capture')} in {MERGED_CDXJ}"
    )
    return {**placed, "captures": captures, "summary": summary}


def finish_merged(folder: Path) -> None:
    """Close copies of files a killed crawl left open (cut to their last whole record), then
    index every WARC file that has no CDXJ, so look-ups never fall back to scanning."""
    if not folder.is_dir():
        return
    for path, cut in recover_open_files(folder):
        log.warning(
            "closed %s, left open by a stopped crawl (%d bytes of a partial record cut)", path.name, cut
        )
    for path in sorted(folder.iterdir()):
        if path.name.endswith((".warc.gz", ".warc")) and not cdxj_path_for(path).is_file():
            write_cdxj(cdxj_path_for(path), index_warc(path))


def _warc_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WARC_SUFFIXES))


def _place(source: Path, target: Path, copy: bool) -> str:
    """Link (or copy) `source` to `target`; 'linked', 'copied' or 'already' (merged before)."""
    closed = target.with_name(target.name.removesuffix(OPEN_SUFFIX))
    if target.exists():
        same = target.samefile(source) or target.stat().st_size == source.stat().st_size
        if not same:
            raise ArchiveError(f"{target} already exists and differs from {source}: not overwritten")
        return "already"
    if closed != target and closed.exists():
        return "already"  # a file left open, closed by an earlier merge
    if not copy and not source.name.endswith(OPEN_SUFFIX):
        try:
            os.link(source, target)
            return "linked"
        except OSError:
            pass
    tmp = target.with_name(target.name + ".part")
    shutil.copy2(source, tmp)
    os.replace(tmp, target)
    return "copied"


def _merged_lines(paths: Sequence[Path]) -> Iterator[str]:
    with ExitStack() as stack:
        handles = [stack.enter_context(p.open(encoding="utf-8")) for p in paths]
        seen_last = None
        for line in heapq.merge(*handles):
            if line != seen_last and line.strip():
                yield line if line.endswith("\n") else line + "\n"
            seen_last = line
