"""Where exported files go: a folder (incremental, with a manifest) or a zip file.

The folder keeps ``.archiver-export.json``: for each file it wrote, the URL, the record
it came from, its SHA-256, size and modification time.  A second export skips a file
whose record and link plan did not change and whose file is untouched on disk, writes
a file only when its bytes differ, and removes the files of URLs that left the plan.
It never removes a file it did not write.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path as FsPath
from typing import Any, BinaryIO, Protocol

from archiver.api import ArchiveError

from .names import MirrorPath
from .safedir import SafeDir

__all__ = ["MANIFEST_NAME", "DirSink", "ExclusiveZip", "Sink", "ZipSink", "create_exclusive"]

MANIFEST_NAME = ".archiver-export.json"
MANIFEST_FORMAT = 1
# Types already compressed: stored as they are in a zip.
_STORED_TYPES = (
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".webp",
    ".avif",
    ".woff",
    ".woff2",
    ".gz",
    ".zip",
    ".mp4",
    ".webm",
    ".mp3",
    ".ogg",
    ".pdf",
)


@dataclass(frozen=True, slots=True)
class FileEntry:
    url: str
    source: str
    sha256: str
    size: int
    mtime_ns: int = 0
    missing: list[list[str]] | None = None
    """Links of this file left on the web, as [url, kind]: re-reported when it is skipped."""


class Sink(Protocol):
    written: int
    unchanged: int
    removed: int
    size: int

    def fresh(self, path: MirrorPath, source: str) -> FileEntry | None: ...

    def blocked(self, path: MirrorPath) -> str | None: ...

    def put(
        self,
        path: MirrorPath,
        data: bytes,
        *,
        url: str,
        source: str,
        mtime: float | None,
        missing: list[list[str]] | None = None,
    ) -> None: ...

    def finish(self) -> None: ...

    def abort(self) -> None: ...


def _key(path: MirrorPath) -> str:
    return "/".join(path)


def _load_manifest(folder: SafeDir) -> tuple[str, dict[str, FileEntry]]:
    """The plan hash and entries of the last export; an entry that is not one is dropped.

    The manifest lies in the output folder, where anyone may have edited it: an entry
    dropped only means its file is rendered again and never removed by us.
    """
    raw = folder.read((MANIFEST_NAME,))
    if raw is None:
        return "", {}
    try:
        data = json.loads(raw)
        listed = data["files"]
        if not isinstance(listed, dict):
            return "", {}
    except (ValueError, KeyError, TypeError):
        return "", {}
    files = {str(key): entry for key, value in listed.items() if (entry := _entry(key, value)) is not None}
    if data.get("format") != MANIFEST_FORMAT or len(files) != len(listed):
        return "", files
    return str(data.get("plan", "")), files


def _entry(key: object, value: object) -> FileEntry | None:
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    parts = key.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    url, source, sha256 = (value.get(name) for name in ("url", "source", "sha256"))
    size, mtime_ns = (value.get(name, 0) for name in ("size", "mtime_ns"))
    missing = value.get("missing")
    if not (isinstance(url, str) and isinstance(source, str) and isinstance(sha256, str)):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (size, mtime_ns)):
        return None
    if missing is not None and not (
        isinstance(missing, list)
        and all(
            isinstance(link, list) and len(link) == 2 and all(isinstance(x, str) for x in link)
            for link in missing
        )
    ):
        return None
    return FileEntry(url, source, sha256, size, mtime_ns, missing)


class DirSink:
    """An output folder, written incrementally."""

    def __init__(self, root: FsPath, plan_hash: str) -> None:
        self.folder = SafeDir(root)
        self.plan_hash = plan_hash
        old_plan, self.old = _load_manifest(self.folder)
        self.same_plan = old_plan == plan_hash
        self.new: dict[str, FileEntry] = {}
        self.written = self.unchanged = self.removed = self.size = 0

    def blocked(self, path: MirrorPath) -> str | None:
        """Why `path` cannot be written (something not ours in the way), else None.

        A file of an earlier export standing where a folder is now needed is removed.
        """
        found = self.folder.obstacle(path)
        if found is None:
            return None
        depth, what = found
        where = path[: depth + 1]
        if what == "a file" and _key(where) in self.old and self.folder.remove(where):
            self.removed += 1
            return self.blocked(path)
        needed = "a file" if depth == len(path) - 1 else "a folder"
        return f"{'/'.join(where)} is in the way ({what} where the export needs {needed})"

    def fresh(self, path: MirrorPath, source: str) -> FileEntry | None:
        """The manifest entry (counted as unchanged) when the file at `path` is already
        what `source` gives under the same plan; None when it must be rendered."""
        entry = self.old.get(_key(path))
        if not self.same_plan or entry is None or entry.source != source:
            return None
        found = self.folder.stat(path)
        if found is None or found.st_size != entry.size or found.st_mtime_ns != entry.mtime_ns:
            return None
        self._keep(path, entry)
        return entry

    def _keep(self, path: MirrorPath, entry: FileEntry) -> None:
        self.new[_key(path)] = entry
        self.unchanged += 1
        self.size += entry.size

    def put(
        self,
        path: MirrorPath,
        data: bytes,
        *,
        url: str,
        source: str,
        mtime: float | None,
        missing: list[list[str]] | None = None,
    ) -> None:
        digest = hashlib.sha256(data).hexdigest()
        found = self.folder.stat(path)
        old = self.old.get(_key(path))
        if found is not None and found.st_size == len(data):
            same = (
                old is not None and old.sha256 == digest and old.mtime_ns == found.st_mtime_ns
            ) or self.folder.read(path) == data
            if same:
                self._keep(path, FileEntry(url, source, digest, len(data), found.st_mtime_ns, missing))
                return
        self.folder.write(path, data, mtime)
        written = self.folder.stat(path)
        mtime_ns = written.st_mtime_ns if written else 0
        self.new[_key(path)] = FileEntry(url, source, digest, len(data), mtime_ns, missing)
        self.written += 1
        self.size += len(data)

    def finish(self) -> None:
        for key in sorted(set(self.old) - set(self.new)):
            if self.folder.remove(tuple(key.split("/"))):
                self.removed += 1
        manifest: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "plan": self.plan_hash,
            "files": {key: asdict(entry) for key, entry in sorted(self.new.items())},
        }
        self.folder.write(
            (MANIFEST_NAME,), json.dumps(manifest, indent=0, ensure_ascii=False).encode("utf-8")
        )
        self.folder.close()

    def abort(self) -> None:
        """Keep what is known so far (old entries not yet seen stay listed) for the next run."""
        merged = {**self.old, **self.new}
        manifest = {"format": MANIFEST_FORMAT, "plan": "", "files": {k: asdict(v) for k, v in merged.items()}}
        try:
            self.folder.write((MANIFEST_NAME,), json.dumps(manifest, indent=0).encode("utf-8"))
        finally:
            self.folder.close()


def zip_time(mtime: float | None) -> tuple[int, int, int, int, int, int]:
    moment = datetime.fromtimestamp(mtime if mtime else 315532800, UTC)
    if moment.year < 1980:
        return (1980, 1, 1, 0, 0, 0)
    return (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


def create_exclusive(path: FsPath) -> BinaryIO:
    """A new, empty file at `path`, to be renamed into place when whole.

    Whatever stands at `path` (a temporary left by a killed run, a symbolic link planted
    to point elsewhere) is removed, never written through: the file is created with
    O_EXCL|O_NOFOLLOW, so a link made in between fails the call instead.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o644), "wb")


class ExclusiveZip(zipfile.ZipFile):
    """A zip written into a file made by `create_exclusive`, closed with it."""

    def __init__(self, partial: FsPath) -> None:
        self._handle = create_exclusive(partial)
        try:
            super().__init__(self._handle, "w", allowZip64=True)
        except BaseException:
            self._handle.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._handle.close()


class ZipSink:
    """One zip file holding the same tree; written to ``NAME.partial`` and renamed at the end."""

    def __init__(self, output: FsPath) -> None:
        self.output = output
        self.partial = output.with_name(output.name + ".partial")
        try:
            self.zip: zipfile.ZipFile = ExclusiveZip(self.partial)
        except OSError as exc:
            raise ArchiveError(f"cannot write {output}: {exc.strerror or exc}") from None
        self.written = self.unchanged = self.removed = self.size = 0

    def fresh(self, path: MirrorPath, source: str) -> FileEntry | None:
        return None

    def blocked(self, path: MirrorPath) -> str | None:
        return None

    def put(
        self,
        path: MirrorPath,
        data: bytes,
        *,
        url: str,
        source: str,
        mtime: float | None,
        missing: list[list[str]] | None = None,
    ) -> None:
        name = _key(path)
        info = zipfile.ZipInfo(name, date_time=zip_time(mtime))
        info.external_attr = 0o644 << 16
        info.compress_type = (
            zipfile.ZIP_STORED if name.lower().endswith(_STORED_TYPES) else zipfile.ZIP_DEFLATED
        )
        self.zip.writestr(info, data)
        self.written += 1
        self.size += len(data)

    def finish(self) -> None:
        self.zip.close()
        os.replace(self.partial, self.output)

    def abort(self) -> None:
        self.zip.close()
        self.partial.unlink(missing_ok=True)
