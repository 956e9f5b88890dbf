"""The one exception hierarchy for problems a user can fix.

The CLI turns an `ArchiverError` into a single line on stderr and its `exit_code`;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class ArchiverError(Exception):
    """A problem the user can act on; `str(error)` is the whole message."""

    exit_code = 1


class ConfigError(ArchiverError):
    """A bad option, config key, value or combination of them."""

    exit_code = 2


class UsageError(ArchiverError):
    """A command was given arguments that cannot work (a missing archive, a file for a folder)."""

    exit_code = 2


class BadLines(UsageError):
    """Every bad line of an input file (a roots file) at once: the CLI prints one error line
    for each, so that one run shows what to fix."""

    SHOWN = 20
    """Lines named at most; the others are counted."""

    def __init__(self, problems: list[str]) -> None:
        more = len(problems) - self.SHOWN
        self.lines = (*problems[: self.SHOWN], *([f"and {more} more bad lines"] if more > 0 else []))
        super().__init__("; ".join(self.lines))


class ArchiveError(ArchiverError):
    """An archive folder or one of its files cannot be used as asked."""

    exit_code = 1


class ArchiveLockedError(ArchiveError):
    """Another live process is writing this archive."""


class FrontierUnreachable(ArchiveError):
    """The frontier a crawl shares with other processes (a plugin's) cannot be reached."""


class SeedError(ArchiverError):
    """No root URL could be fetched at all (DNS failure, refused connection, ...)."""

    exit_code = 1


class LoginError(ArchiverError):
    """The crawl was not logged in: the page a root led to lacks `--expect-text`."""

    exit_code = 1


class FetchError(ArchiverError):
    """One URL gave no usable HTTP response; `kind` names the failure class for reports."""

    def __init__(self, url: str, message: str, *, kind: str = "network", attempts: int = 1) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url
        self.message = message
        self.kind = kind
        self.attempts = attempts


RETRYABLE_KINDS = frozenset({"network", "timeout", "dns", "disconnect"})
"""The `FetchError` kinds another try may cure; a refused certificate ("certificate") or
address ("refused") is the same on every try."""


class ProxyFault(ArchiverError):
    """The proxy every request goes through does not answer, or refuses the crawl's credentials
    (407): every URL would fail alike, so the crawl stops (resumable) instead of failing them one
    by one."""

    exit_code = 1


_EXHAUSTED_ERRNO = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files in the system",
}
_EXHAUSTED_TEXT = (
    ("No space left on device", "no space left on device"),
    ("database or disk is full", "no space left on device"),
    ("Disk quota exceeded", "disk quota exceeded"),
    ("Too many open files", "too many open files"),
)


def exhausted(exc: BaseException) -> str | None:
    """What ran out ("no space left on device", "too many open files") when that is what
    `exc` comes down to, through its causes, its context and the members of a group; else None.

    A full disk or a spent file limit fails every writer at once (the WARC writer, the
    index, the frontier's database), each its own way; the user needs the one cause.
    """
    stack: list[BaseException] = [exc]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _EXHAUSTED_ERRNO:
            return _EXHAUSTED_ERRNO[current.errno]
        text = str(current)
        for needle, cause in _EXHAUSTED_TEXT:
            if needle in text:
                return cause
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return None


def exhausted_message(cause: str, archive: str | os.PathLike[str], command: str) -> str:
    """The one line for a crawl stopped by `cause` (see `exhausted`): what to do, how to go on."""
    remedy = (
        "free some space"
        if "space" in cause or "quota" in cause
        else "raise the open-files limit (ulimit -n)"
    )
    return (
        f"{cause}: the crawl stopped; what it archived is kept in {archive}."
        f" {remedy.capitalize()}, then run `{command}` to go on"
    )


def is_read_only(exc: OSError) -> bool:
    """True for a write refused by permissions or a read-only file system."""
    return isinstance(exc, PermissionError) or exc.errno == errno.EROFS


def read_only_message(exc: OSError) -> str:
    """One line naming what could not be written: a read-only archive is a user's situation, not a bug."""
    name = exc.filename
    if not name:
        return f"cannot write: {exc.strerror or exc} (is the archive read-only?)"
    path = Path(os.fsdecode(name))
    where = path if os.path.lexists(path) else path.parent
    if exc.errno == errno.EROFS or (os.path.lexists(where) and not os.access(where, os.W_OK)):
        return f"{path} is read-only ({exc.strerror})"
    return f"{path}: {exc.strerror}"


def check_writable(folder: Path, doing: str) -> None:
    """Raise ArchiveError when this user cannot write in `folder` (a read-only archive)."""
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise ArchiveError(f"{folder} is read-only: cannot {doing}")
