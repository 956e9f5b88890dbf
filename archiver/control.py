"""Live control of a running crawl: `archiver control ARCHIVE VERB` and the crawl's inbox.

The channel is a file of the archive, ``control.jsonl``, one JSON object a line, appended
with O_APPEND so that several senders never interleave: a command
``{"id": ..., "verb": "exclude", "args": ["/calendar/"], "at": ...}``, then the crawl's
answer ``{"answer": ID, "ok": true, "message": "..."}``.  The crawl reads the lines that
arrive after it started (once every `POLL_SECONDS`) and answers each; the sender waits
for its answer.  The file is also the record of what was changed and when, which
`archiver why` quotes.  A file needs no port, no server and no permissions beyond the
archive's own: whoever may write the archive may steer its crawl.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import ArchiveError, UsageError
from .layout import CONTROL_NAME

POLL_SECONDS = 0.25
ANSWER_TIMEOUT = 10.0
MAX_COMMAND = 16 * 1024
"""The longest command line sent; a crawl skips a line over `_MAX_LINE` unread (and answers it)."""
_MAX_LINE = 64 * 1024
_ID = re.compile(rb'"id"\s*:\s*"([0-9a-f]{1,64})"')

VERBS: dict[str, str] = {
    "pause": "",
    "resume": "",
    "stop": "",
    "exclude": "REGEX",
    "include": "REGEX",
    "delay": "SECONDS",
    "concurrency": "N",
    "tasks": "N",
    "host": "HOST pause|resume",
}
"""Each verb and the arguments it takes, as `archiver control --help` shows them."""


@dataclass(frozen=True, slots=True)
class Command:
    id: str
    verb: str
    args: tuple[str, ...]
    at: str


def check(verb: str, args: tuple[str, ...]) -> None:
    """Raise UsageError naming what is wrong with a command, before it is sent."""
    if verb not in VERBS:
        raise UsageError(f"unknown control verb {verb!r}: expected one of {', '.join(VERBS)}")
    wanted = VERBS[verb].split(" ") if VERBS[verb] else []
    if len(args) != len(wanted):
        shown = f" {VERBS[verb]}" if VERBS[verb] else ""
        raise UsageError(f"`archiver control ARCHIVE {verb}{shown}`: {len(args)} arguments given")
    if verb in ("exclude", "include"):
        try:
            re.compile(args[0])
        except re.error as exc:
            raise UsageError(f"{verb} {args[0]!r}: not a regular expression ({exc})") from None
    elif verb == "delay":
        seconds = number(args[0], float)
        if seconds is None or not 0 <= seconds <= 86_400:
            raise UsageError(f"delay {args[0]!r}: expected seconds from 0 to 86400")
    elif verb in ("concurrency", "tasks"):
        limit = 1_000 if verb == "concurrency" else 10_000
        value = number(args[0], int)
        if value is None or not 1 <= value <= limit:
            raise UsageError(f"{verb} {args[0]!r}: expected a whole number from 1 to {limit}")
    elif verb == "host" and args[1] not in ("pause", "resume"):
        raise UsageError(f"host {args[0]} {args[1]!r}: expected pause or resume")
    size = len(json.dumps({"id": "0" * 16, "verb": verb, "args": list(args), "at": "0" * 25}).encode())
    if size > MAX_COMMAND:
        raise UsageError(f"{verb}: a command of {size} bytes; at most {MAX_COMMAND} are read")


def number(text: str, kind: type[int] | type[float]) -> int | float | None:
    """`text` as a number of `kind`; None when it is not one, or not finite (``nan``, ``inf``,
    ``1e999``: no comparison refuses NaN, and a delay of NaN would stall the crawl for good)."""
    try:
        value = kind(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _append(archive: Path, record: dict[str, Any]) -> None:
    """One line, with O_APPEND; after a line torn by a writer that died mid-write, on a line of
    its own (a command glued to the torn line would be lost with it)."""
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
    fd = os.open(archive / CONTROL_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        os.write(fd, line)
    finally:
        os.close(fd)


def send(archive: Path, verb: str, args: tuple[str, ...], timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
    """Send a command to the crawl running in `archive` and return its answer.

    The caller checked that a crawl runs; a crawl that does not answer within `timeout`
    (it ended meanwhile, or is stuck) is an ArchiveError.
    """
    check(verb, args)
    command_id = secrets.token_hex(8)
    path = archive / CONTROL_NAME
    lines = LineReader(path, path.stat().st_size if path.exists() else 0)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    _append(archive, {"id": command_id, "verb": verb, "args": list(args), "at": at})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in lines.records():
            if record.get("answer") == command_id:
                return record
        time.sleep(POLL_SECONDS / 2)
    raise ArchiveError(f"the crawl in {archive} did not answer within {timeout:g} s (did it just end?)")


class LineReader:
    """The whole lines appended to a file since `offset`, each read once.

    A line is read in at most `_MAX_LINE` bytes: a longer one (junk, or a command no sender
    writes) is passed over as it arrives, never held whole, and its start is handed on as
    `Overlong` so that its command, if it names one, can be answered.  A line whose newline
    has not come yet is read again at the next call (the sender's write may be under way).
    """

    def __init__(self, path: Path, offset: int) -> None:
        self.path = path
        self.offset = offset
        self._skipping: bytes | None = None
        """The start of the overlong line being passed over."""

    def lines(self) -> Iterator[bytes | Overlong]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            handle.seek(self.offset)
            while True:
                chunk = handle.readline(_MAX_LINE + 1)
                whole = chunk.endswith(b"\n")
                if self._skipping is not None:
                    if not chunk:
                        return
                    self.offset += len(chunk)
                    if whole:
                        start, self._skipping = self._skipping, None
                        yield Overlong(start)
                    continue
                if whole:
                    self.offset += len(chunk)
                    yield chunk
                elif len(chunk) > _MAX_LINE:
                    self.offset += len(chunk)
                    self._skipping = chunk[:1024]
                else:
                    return  # nothing more, or a line still being written

    def records(self) -> Iterator[dict[str, Any]]:
        """The JSON objects among the lines; the rest skipped."""
        for line in self.lines():
            if isinstance(line, Overlong):
                continue
            record = _parsed(line)
            if record is not None:
                yield record


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line over `_MAX_LINE` bytes, passed over: its first KiB."""

    start: bytes


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def read_records(path: Path, offset: int) -> Iterator[tuple[dict[str, Any], int]]:
    """Whole JSON lines of `path` from `offset`, each with the offset after it; others skipped."""
    lines = LineReader(path, offset)
    for line in lines.lines():
        record = None if isinstance(line, Overlong) else _parsed(line)
        if record is not None:
            yield record, lines.offset


class Inbox:
    """The running crawl's side: commands that arrived since it started, then its answers.

    A line that is not a command is skipped; one that names its id (a command too long, or
    broken) is answered as refused, so that its sender hears why instead of waiting."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.path = archive / CONTROL_NAME
        self._lines = LineReader(self.path, self.path.stat().st_size if self.path.exists() else 0)

    def new_commands(self) -> list[Command]:
        found = []
        for line in self._lines.lines():
            if isinstance(line, Overlong):
                self._refuse(line.start, f"not read: a line over {_MAX_LINE} bytes")
                continue
            record = _parsed(line)
            command = None if record is None else from_record(record)
            if command is not None:
                found.append(command)
            elif record is None or "answer" not in record:
                self._refuse(line, "not a command: expected a JSON object with id, verb and args")
        return found

    def _refuse(self, start: bytes, message: str) -> None:
        named = _ID.search(start)
        if named is not None:
            _append(self.archive, {"answer": named.group(1).decode(), "ok": False, "message": message})

    def answer(self, command: Command, ok: bool, message: str) -> None:
        _append(self.archive, {"answer": command.id, "ok": ok, "message": message})


def history(archive: Path) -> list[Command]:
    """Every command ever sent to the crawls of `archive`, oldest first (`why` quotes them)."""
    found = (from_record(record) for record, _ in read_records(archive / CONTROL_NAME, 0))
    return [command for command in found if command is not None]


def as_record(command: Command) -> dict[str, Any]:
    return {"id": command.id, "verb": command.verb, "args": list(command.args), "at": command.at}


def from_record(record: dict[str, Any]) -> Command | None:
    """The command a line (or another process of a shared crawl) holds; None if not one."""
    command_id, verb, args = record.get("id"), record.get("verb"), record.get("args")
    if isinstance(command_id, str) and isinstance(verb, str) and isinstance(args, list):
        return Command(command_id, verb, tuple(map(str, args)), str(record.get("at", "")))
    return None
