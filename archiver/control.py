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
_MAX_LINE = 64 * 1024

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
        if number(args[0], float) is None or float(args[0]) < 0 or float(args[0]) > 86_400:
            raise UsageError(f"delay {args[0]!r}: expected seconds from 0 to 86400")
    elif verb in ("concurrency", "tasks"):
        limit = 1_000 if verb == "concurrency" else 10_000
        value = number(args[0], int)
        if value is None or not 1 <= value <= limit:
            raise UsageError(f"{verb} {args[0]!r}: expected a whole number from 1 to {limit}")
    elif verb == "host" and args[1] not in ("pause", "resume"):
        raise UsageError(f"host {args[0]} {args[1]!r}: expected pause or resume")


def number(text: str, kind: type[int] | type[float]) -> int | float | None:
    try:
        return kind(text)
    except ValueError:
        return None


def _append(archive: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
    fd = os.open(archive / CONTROL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
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
    start = path.stat().st_size if path.exists() else 0
    at = datetime.now(UTC).isoformat(timespec="seconds")
    _append(archive, {"id": command_id, "verb": verb, "args": list(args), "at": at})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record, _ in read_records(path, start):
            if record.get("answer") == command_id:
                return record
        time.sleep(POLL_SECONDS / 2)
    raise ArchiveError(f"the crawl in {archive} did not answer within {timeout:g} s (did it just end?)")


def read_records(path: Path, offset: int) -> Iterator[tuple[dict[str, Any], int]]:
    """Whole JSON lines of `path` from `offset`, each with the offset after it; torn ones skipped."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            for line in handle:
                if not line.endswith(b"\n") or len(line) > _MAX_LINE:
                    return
                offset += len(line)
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record, offset
    except FileNotFoundError:
        return


class Inbox:
    """The running crawl's side: commands that arrived since it started, then its answers."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.path = archive / CONTROL_NAME
        self._offset = self.path.stat().st_size if self.path.exists() else 0

    def new_commands(self) -> list[Command]:
        found = []
        for record, offset in read_records(self.path, self._offset):
            self._offset = offset
            command = from_record(record)
            if command is not None:
                found.append(command)
        return found

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
