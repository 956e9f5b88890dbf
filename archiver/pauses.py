"""Who paused what in a running crawl, read back from its `control.jsonl` for `archiver status`.

The crawl answers each `archiver control` command in the same file; the commands it
accepted since the running process took the archive's lock say whether the crawl is paused
and which hosts are held, and when: what `status` shows with the command that undoes each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .control import from_record, read_records
from .layout import CONTROL_NAME


@dataclass
class Pauses:
    crawl: str | None = None
    """When `archiver control pause` paused the whole crawl (ISO time), None when it runs."""
    hosts: dict[str, str] = field(default_factory=dict)
    """Hosts held by `archiver control ARCHIVE host HOST pause`, each with when."""


def _seconds(at: str) -> float | None:
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return None


def read_pauses(archive: Path, since: float | None) -> Pauses:
    """The pauses in force: the accepted commands sent after `since` (the running process's
    start, a Unix time), in the order the crawl answered them."""
    pauses = Pauses()
    sent = {}
    for record, _ in read_records(archive / CONTROL_NAME, 0):
        command = from_record(record)
        if command is not None:
            at = _seconds(command.at)
            if since is None or (at is not None and at >= since - 1):
                sent[command.id] = command
            continue
        command = sent.pop(str(record.get("answer")), None)
        if command is None or record.get("ok") is not True:
            continue
        if command.verb == "pause":
            pauses.crawl = command.at
        elif command.verb == "resume":
            pauses.crawl = None
        elif command.verb == "host" and len(command.args) == 2:
            host, action = command.args
            if action == "pause":
                pauses.hosts[host] = command.at
            else:
                pauses.hosts.pop(host, None)
    return pauses
