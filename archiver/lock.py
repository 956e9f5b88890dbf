"""One writer per archive: `ARCHIVE/crawl.lock`, an advisory lock holding the writer's PID.

The lock itself is an ``flock`` on the file, which the kernel drops when the holding
process dies however it dies (``kill -9``, power loss), so a stale lock can never
block a resume.  The PID, host and start time written inside are for people and for
``archiver status``: they say who holds a live lock, and that a lock left by a dead
process was taken over.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .errors import ArchiveError, ArchiveLockedError, is_read_only
from .layout import LOCK_NAME

_RETRY_SECONDS = 0.5
"""A status probe holds the lock for microseconds: a starting crawl waits this long for it."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Holder:
    """What a lock file says about the process that wrote it."""

    pid: int | None
    host: str
    since: float | None

    def describe(self) -> str:
        who = f"PID {self.pid}" if self.pid is not None else "an unknown process"
        if self.host and self.host != socket.gethostname():
            who += f" on {self.host}"
        if self.since:
            who += f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.since))}"
        return who


def read_holder(archive: Path) -> Holder | None:
    """The holder written in the lock file; None when there is none or it was released."""
    try:
        text = (archive / LOCK_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return Holder(None, "", None)
    if not text.strip():
        return None
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    pid = fields.get("pid", "")
    since = fields.get("since", "")
    try:
        since_value: float | None = float(since)
    except ValueError:
        since_value = None
    return Holder(int(pid) if pid.isdigit() else None, fields.get("host", ""), since_value)


class ArchiveLock:
    """The exclusive right to write one archive; release it (or exit) to hand it on."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.path = archive / LOCK_NAME
        self._file: IO[str] | None = None
        self.took_over: Holder | None = None
        """The dead process whose lock this one replaced, if any."""

    def acquire(self) -> ArchiveLock:
        """Take the lock or raise `ArchiveLockedError` naming the live holder."""
        try:
            self.archive.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+", encoding="utf-8")
        except OSError as exc:
            if is_read_only(exc):
                raise ArchiveError(f"{self.archive} is read-only: cannot lock it for writing") from None
            raise ArchiveError(f"cannot lock {self.archive}: {exc.strerror or exc}") from None
        deadline = time.monotonic() + _RETRY_SECONDS
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                handle.close()
                holder = read_holder(self.archive)
                who = holder.describe() if holder else "another process"
                raise ArchiveLockedError(
                    f"{self.archive} is being written by {who}; wait for it or stop it first"
                ) from None
        previous = read_holder(self.archive)
        if previous is not None and previous.pid is not None and previous.pid != os.getpid():
            self.took_over = previous
            log.info("taking over the stale lock of %s (not running)", previous.describe())
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid={os.getpid()}\nhost={socket.gethostname()}\nsince={time.time():.3f}\n")
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        """Give the lock up, leaving the file empty.

        The file is not removed: a process waiting on the old file while a third one
        created a new one would make two holders.
        """
        handle, self._file = self._file, None
        if handle is None:
            return
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
            handle.flush()
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()

    def __enter__(self) -> ArchiveLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_locked(archive: Path) -> bool:
    """True when a live process holds the archive's lock (probed without blocking)."""
    path = archive / LOCK_NAME
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False
