"""A WACZ file given where an archive is read (`warc ls`, `warc check`, `export`, `serve`).

Its WARC files are read from a temporary archive, made as `reindex --warc` makes one
(`importing.import_warcs`: each WARC file of the WACZ's ``archive/`` folder placed and
indexed, its ``pages.jsonl`` kept beside them), and removed when the command ends.
`warc check` looks at the WARC files byte for byte instead (`wacz_members`): placing them
may recompress one, which would hide the very faults it looks for.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from archiver.api import UsageError

from .suffixes import STORED_NAMES, WACZ_NAME

__all__ = ["is_wacz", "unpacked_wacz", "wacz_members"]

_COPY_CHUNK = 1024 * 1024


def is_wacz(path: Path) -> bool:
    return path.is_file() and path.name.endswith(WACZ_NAME)


def unpacked_wacz(path: Path, stack: contextlib.ExitStack) -> Path:
    """An archive holding the WARC files of the WACZ file `path`, removed when `stack` closes."""
    from .importing import import_warcs

    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="archiver-wacz-")))
    archive = folder / path.name[: -len(WACZ_NAME)]
    archive.mkdir()
    import_warcs([path], archive)
    return archive


def wacz_members(path: Path, stack: contextlib.ExitStack) -> tuple[Path, list[Path]]:
    """The WARC files of the WACZ `path` copied as they are into a folder removed with `stack`:
    (the folder, standing for `path` in what is printed; the files, ``FOLDER/archive/NAME``)."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="archiver-wacz-")))
    found: list[Path] = []
    try:
        with zipfile.ZipFile(path) as wacz:
            for info in wacz.infolist():
                parts = PurePosixPath(info.filename).parts
                if info.is_dir() or len(parts) != 2 or parts[0] != "archive":
                    continue
                name = parts[1]
                if not name.endswith(STORED_NAMES) or name.startswith(".") or "\\" in name or "\0" in name:
                    continue
                target = folder / "archive" / name
                target.parent.mkdir(exist_ok=True)
                with wacz.open(info) as stream, target.open("wb") as out:
                    shutil.copyfileobj(stream, out, _COPY_CHUNK)
                found.append(target)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path}: not a readable WACZ file ({exc})") from None
    if not found:
        raise UsageError(f"{path}: no WARC files in its archive/ folder: not a WACZ file")
    return folder, found
