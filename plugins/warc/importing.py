"""WARC files made by other tools (wget, Heritrix, Browsertrix...) brought into an archive.

`archiver reindex --warc FILE... -o ARCHIVE` indexes them for search; the archive must also
hold them, with their CDXJ, or a search hit would lead nowhere: `serve`, `export` and
`warc check` read ``ARCHIVE/warc/``.  Each file goes there under its own name, copied
(the default: the archive stands alone), hard-linked (no extra space, same file system)
or symlinked (no extra space, but the archive breaks if the original moves).  A file the
archive already holds with the same bytes is kept as it is, so importing again is safe.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from archiver.errors import UsageError

from .cdxj import cdxj_path_for, index_warc, write_cdxj

__all__ = ["LINK_MODES", "import_warcs"]

LinkMode = Literal["copy", "hard", "symlink"]
LINK_MODES: tuple[LinkMode, ...] = ("copy", "hard", "symlink")
IMPORTABLE = (".warc.gz", ".warc")


def import_warcs(sources: Sequence[Path], archive: Path, link: LinkMode = "copy") -> list[Path]:
    """Place `sources` in ``archive/warc/`` with a CDXJ index each; returns the placed paths."""
    folder = archive / "warc"
    targets: dict[Path, Path] = {}
    for source in sources:
        if not source.is_file():
            raise UsageError(f"not a WARC file: {source}")
        if not source.name.endswith(IMPORTABLE):
            raise UsageError(f"{source}: a WARC file's name ends in .warc.gz or .warc")
        target = folder / source.name
        if target in targets.values():
            raise UsageError(f"two WARC files are named {source.name}: rename one")
        if _holds(target) and not _same(source, target):
            raise UsageError(f"{archive} already holds a different {source.name}")
        targets[source] = target
    folder.mkdir(parents=True, exist_ok=True)
    for source, target in targets.items():
        if not _holds(target):
            _place(source, target, link)
        write_cdxj(cdxj_path_for(target), index_warc(target))
    return list(targets.values())


def _holds(target: Path) -> bool:
    return target.is_file() or target.is_symlink()


def _same(source: Path, target: Path) -> bool:
    try:
        return os.path.samefile(source, target) or filecmp.cmp(source, target, shallow=False)
    except OSError:
        return False


def _place(source: Path, target: Path, link: LinkMode) -> None:
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
