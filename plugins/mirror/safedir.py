"""Write and remove files strictly inside one folder, whatever is already in it.

Every operation walks from the folder's own file descriptor, one name at a time, with
``O_NOFOLLOW``: a symbolic link already inside the folder (``DIR/host -> /etc``) is never
followed, a name that is not a plain segment (``..``, ``a/b``, NUL) is refused before any
system call, and a file is written to a temporary name and renamed over its target, so a
link in the target's place is replaced, not written through.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path as FsPath

from archiver.api import ArchiveError

from .names import TEMPORARY_PREFIX, MirrorPath

__all__ = ["Blocked", "SafeDir"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


class Blocked(Exception):
    """A path of the export cannot be written: something that is not ours is in the way."""


def check_segment(segment: str) -> None:
    if (
        not segment
        or segment in (".", "..")
        or "/" in segment
        or "\\" in segment
        or "\0" in segment
        or len(segment.encode("utf-8", "surrogatepass")) > 255
    ):
        raise Blocked(f"refusing unsafe file name {segment!r}")


class SafeDir:
    """The output folder, opened once; paths are tuples of segments relative to it."""

    def __init__(self, root: FsPath) -> None:
        self.root = root
        try:
            self.fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise ArchiveError(f"cannot open {root}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _folder(self, parts: MirrorPath, create: bool) -> int:
        fd = os.dup(self.fd)
        try:
            for depth, part in enumerate(parts):
                check_segment(part)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    # made meanwhile, or a dangling link: the open below decides
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    try:
                        child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        raise self._blocked(parts[: depth + 1], exc) from None
                except OSError as exc:
                    if isinstance(exc, PermissionError):
                        raise
                    raise self._blocked(parts[: depth + 1], exc) from None
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _blocked(self, parts: MirrorPath, exc: OSError) -> Blocked:
        where = "/".join(parts)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            return Blocked(f"{where} is in the way (a file or a symbolic link where a folder is needed)")
        return Blocked(f"{where}: {exc.strerror or exc}")

    def write(self, path: MirrorPath, data: bytes, mtime: float | None = None) -> None:
        """Write `data` to `path` (folders made as needed), replacing what was there."""
        check_segment(path[-1])
        fd = self._folder(path[:-1], create=True)
        try:
            name = path[-1]
            temporary = (
                TEMPORARY_PREFIX
                + hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
                + ".tmp"
            )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=fd)
            handle = os.open(temporary, _FILE_FLAGS, 0o666, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(handle, view)
                    view = view[written:]
            finally:
                os.close(handle)
            if mtime is not None:
                os.utime(temporary, (mtime, mtime), dir_fd=fd, follow_symlinks=False)
            try:
                os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError as exc:
                os.unlink(temporary, dir_fd=fd)
                if isinstance(exc, IsADirectoryError | NotADirectoryError) or exc.errno == errno.ENOTEMPTY:
                    raise Blocked(
                        f"{'/'.join(path)} is in the way (a folder where a file is needed)"
                    ) from None
                raise
        finally:
            os.close(fd)

    def obstacle(self, path: MirrorPath) -> tuple[int, str] | None:
        """What would stop `write(path)`: (index of the segment, description), else None.

        A folder of `path` that exists as a file or a symbolic link, or `path` itself
        existing as a folder.  Nothing is created.
        """
        fd = os.dup(self.fd)
        try:
            for depth, part in enumerate(path):
                check_segment(part)
                try:
                    found = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    return None
                last = depth == len(path) - 1
                if last:
                    return (depth, "a folder") if stat.S_ISDIR(found.st_mode) else None
                if stat.S_ISLNK(found.st_mode):
                    return depth, "a symbolic link"
                if not stat.S_ISDIR(found.st_mode):
                    return depth, "a file"
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            return None
        except OSError as exc:
            return len(path) - 1, exc.strerror or str(exc)
        finally:
            os.close(fd)

    def stat(self, path: MirrorPath) -> os.stat_result | None:
        """The stat of a regular file at `path`, None for anything else or nothing."""
        try:
            fd = self._folder(path[:-1], create=False)
        except (OSError, Blocked):
            return None
        try:
            result = os.stat(path[-1], dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)
        return result if stat.S_ISREG(result.st_mode) else None

    def read(self, path: MirrorPath) -> bytes | None:
        try:
            fd = self._folder(path[:-1], create=False)
        except (OSError, Blocked):
            return None
        try:
            handle = os.open(path[-1], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        with os.fdopen(handle, "rb") as stream:
            return stream.read()

    def remove(self, path: MirrorPath) -> bool:
        """Remove the regular file at `path` and the folders it leaves empty; True if removed."""
        if self.stat(path) is None:
            return False
        try:
            fd = self._folder(path[:-1], create=False)
        except (OSError, Blocked):
            return False
        try:
            os.unlink(path[-1], dir_fd=fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        for depth in range(len(path) - 1, 0, -1):
            try:
                parent = self._folder(path[: depth - 1], create=False)
            except (OSError, Blocked):
                break
            try:
                os.rmdir(path[depth - 1], dir_fd=parent)
            except OSError:
                break
            finally:
                os.close(parent)
        return True
