"""What changed between two crawls of an archive: URLs added, changed, unchanged, removed.

The crawl history (`archiver.history`) says when each crawl began; the CDXJ files say
when each capture was made.  The captures of the newer side (the last crawl, or
everything since a given time) are compared, URL by URL, with the newest capture of the
older side (the crawl before, or everything before that time).

The CDXJ files are sorted by SURT key, so their captures are merged as streams and one
URL's captures are looked at together, then forgotten: memory stays flat however many
URLs the archive holds.  At most `MAX_OPEN_FILES` files are merged at once: an archive of
more WARC files is merged in rounds through temporary files, so that the open-file limit
(``ulimit -n``, often 1024) is never reached.  The verdicts go to temporary files, one
per kind, so that the counts can be printed before the lists (`changes_report` writes both).
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
import tempfile
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Literal

from archiver.api import CRAWL_LOG_NAME, CrawlRun, UsageError, read_history, warc_folder

from .capture import REVISIT_MIME, Capture
from .cdxj import WARC_SUFFIXES, cdxj_path_for, index_warc
from .members import ReadLimits

MAX_OPEN_FILES = 64
"""Files read at once by a merge; more are merged in rounds."""

Kind = Literal["added", "changed", "unchanged", "removed", "unreached"]
KINDS: tuple[Kind, ...] = ("added", "changed", "unchanged", "removed", "unreached")
GONE = (404, 410)


def capture_kind(capture: Capture) -> str:
    """How a capture was recorded: a full response, or a revisit and of which sort.

    The CDXJ line of a revisit keeps the status of its own HTTP headers: a 304 is a
    server-not-modified revisit, any other an identical-payload-digest one.
    """
    if not capture.is_revisit:
        return "response"
    return "server-not-modified" if capture.status == 304 else "identical-payload"


def timestamp_of(moment: datetime) -> str:
    """A moment as the 14 digits of a CDXJ line (UTC, to the second)."""
    return moment.astimezone(UTC).strftime("%Y%m%d%H%M%S")


_DURATION = re.compile(r"([0-9]{1,6})\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``2026-11-01``, ``2026-11-01T08:00``, ``2026-11-01T08:00+01:00`` or a duration back
    from now (``7d``, ``12h``, ``30m``, ``2w``); a time without a zone is UTC."""
    value = text.strip()
    duration = _DURATION.fullmatch(value.lower())
    if duration:
        amount, unit = int(duration.group(1)), duration.group(2)
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime(day.year, day.month, day.day)
        else:
            moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"--since {text!r}: expected a date (2026-11-01), a date and time (2026-11-01T08:00)"
            " or a duration (7d, 12h, 30m)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Change:
    """One URL's verdict; `older`/`newer` are the captures compared (None when absent)."""

    kind: Kind
    url: str
    how: str
    older: Capture | None
    newer: Capture | None

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "how": self.how,
            "older": _capture_json(self.older),
            "newer": _capture_json(self.newer),
        }


def _capture_json(capture: Capture | None) -> dict[str, Any] | None:
    if capture is None:
        return None
    return {
        "timestamp": capture.timestamp,
        "status": capture.status,
        "kind": capture_kind(capture),
        "digest": capture.digest,
    }


def _capture_from_json(url: str, fields: dict[str, Any] | None) -> Capture | None:
    if fields is None:
        return None
    revisit = fields["kind"] != "response"
    return Capture(
        url,
        fields["timestamp"],
        fields["status"],
        REVISIT_MIME if revisit else None,
        fields["digest"],
        0,
        0,
        "",
    )


def judge(
    older: Capture | None, newer: Capture | None, newer_complete: bool, failed: Container[str] = ()
) -> Change | None:
    """The verdict on one URL from its newest capture on each side; None when there is none.

    A URL that was already gone (404/410) and still is, or was never there, is no change.
    One whose fetch failed in the newer crawl (`failed`) is not known to be gone.
    """
    old_here = older is not None and older.status not in GONE
    if newer is None:
        if older is None or not old_here:
            return None
        if older.url in failed:
            return Change("unreached", older.url, "the fetch failed in this crawl", older, None)
        if newer_complete:
            return Change("removed", older.url, "not reached", older, None)
        return Change("unreached", older.url, "not reached (crawl unfinished)", older, None)
    url = newer.url
    if newer.status in GONE:
        if not old_here:
            return None
        return Change("removed", url, str(newer.status), older, newer)
    if not old_here:
        return Change("added", url, "new" if older is None else f"was {older.status}", older, newer)
    assert older is not None
    kind = capture_kind(newer)
    if kind == "server-not-modified":
        return Change("unchanged", url, kind, older, newer)
    if newer.digest is not None and newer.digest == older.digest:
        return Change("unchanged", url, kind if kind != "response" else "same payload digest", older, newer)
    return Change("changed", url, "new payload", older, newer)


# -- reading the captures ----------------------------------------------------------------


def failed_urls(log: Path) -> set[str]:
    """URLs whose last record in the crawl log is a failure (no answer after every try)."""
    failed: set[str] = set()
    try:
        handle = log.open("rb")
    except FileNotFoundError:
        return failed
    with handle:
        for line in handle:
            if b'"url"' not in line:
                continue
            try:
                record = json.loads(line)
                url, outcome = record["url"], record.get("outcome", "fetched")
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a killed crawl
            if outcome == "failed":
                failed.add(url)
            elif outcome in ("fetched", "not_modified"):
                failed.discard(url)
    return failed


def _cdxj_stream(path: Path) -> Iterator[tuple[str, str, Capture]]:
    with path.open("rb") as handle:
        for raw in handle:
            try:
                line = raw.decode("utf-8")
                if not line.strip() or line.startswith(("!", " ")):
                    continue
                key, timestamp, _rest = line.split(" ", 2)
                yield key, timestamp, Capture.from_cdxj(line)
            except (ValueError, KeyError, TypeError):
                continue  # `archiver warc ls` names unreadable lines; here they only drop out


def _warc_stream(path: Path, limits: ReadLimits) -> Iterator[tuple[str, str, Capture]]:
    """A WARC file without an index (still being written): its captures, sorted in memory."""
    found = [(c.urlkey, c.timestamp, c) for c in index_warc(path, limits=limits)]
    found.sort(key=lambda entry: (entry[0], entry[1]))
    yield from found


Entry = tuple[str, str, Capture]


def _entry_order(entry: Entry) -> tuple[str, str]:
    return entry[0], entry[1]


def sorted_captures(folder: Path, max_open: int = MAX_OPEN_FILES) -> Iterator[Entry]:
    """Every HTTP capture of the WARC files in `folder` as (SURT key, timestamp, capture), in that order.

    Each stream opens its file when first read; with more than `max_open` of them, runs of
    `max_open` are merged into temporary CDXJ files first (and those again, if need be).
    """
    limits = ReadLimits.for_archive(folder)
    streams: list[Iterator[Entry]] = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or not path.name.endswith(WARC_SUFFIXES):
            continue
        cdxj = cdxj_path_for(path)
        if not path.name.endswith(".open") and cdxj.is_file() and cdxj.stat().st_size > 0:
            streams.append(_cdxj_stream(cdxj))
        else:
            streams.append(_warc_stream(path, limits))
    with tempfile.TemporaryDirectory(prefix="archiver-changes-") as spill:
        round_number = 0
        while len(streams) > max_open:
            round_number += 1
            merged: list[Iterator[Entry]] = []
            for start in range(0, len(streams), max_open):
                run = Path(spill) / f"{round_number}-{start // max_open}.cdxj"
                _spill(heapq.merge(*streams[start : start + max_open], key=_entry_order), run)
                merged.append(_cdxj_stream(run))
            streams = merged
        for entry in heapq.merge(*streams, key=_entry_order):
            if entry[2].status is not None:
                yield entry


def _spill(entries: Iterator[Entry], path: Path) -> None:
    """`entries` as CDXJ lines (their own SURT keys kept), in their order."""
    with path.open("w", encoding="utf-8") as out:
        for key, timestamp, capture in entries:
            fields = capture.to_cdxj().split(" ", 2)[2]
            out.write(f"{key} {timestamp} {fields}\n")


def url_histories(folder: Path) -> Iterator[list[Capture]]:
    """Each URL's captures, oldest first, one URL at a time (a SURT key may hold several URLs)."""
    for _key, group in itertools.groupby(sorted_captures(folder), key=lambda entry: entry[0]):
        by_url: dict[str, list[Capture]] = {}
        for _k, _timestamp, capture in group:
            by_url.setdefault(capture.url, []).append(capture)
        yield from by_url.values()


# -- the two sides -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """The captures of one side: from `start` (inclusive) to `end` (exclusive), 14-digit stamps."""

    start: str
    end: str | None
    crawls: tuple[CrawlRun, ...]

    def holds(self, timestamp: str) -> bool:
        return self.start <= timestamp and (self.end is None or timestamp < self.end)


@dataclass
class Comparison:
    """The plan of a comparison and, once `run`, its counts and spooled verdicts."""

    archive: Path
    history: bool
    runs: list[CrawlRun]
    older: Span | None
    newer: Span
    newer_complete: bool
    since: datetime | None = None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    _spools: dict[str, IO[str]] = field(default_factory=dict, repr=False)

    @property
    def compared(self) -> bool:
        return self.older is not None

    def run(self) -> Comparison:
        """Read the archive's captures, judge every URL and spool the verdicts, one file per kind."""
        for kind in KINDS:
            self._spools[kind] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by close())
        if self.older is None:
            return self
        # the crawl log says which fetches failed last; only the latest crawl's are its own
        failed = failed_urls(self.archive / CRAWL_LOG_NAME) if self.newer.end is None else set()
        for captures in url_histories(warc_folder(self.archive)):
            older = newer = None
            for capture in captures:
                if self.newer.holds(capture.timestamp):
                    newer = capture
                elif self.older.holds(capture.timestamp):
                    older = capture
            change = judge(older, newer, self.newer_complete, failed)
            if change is None:
                continue
            self.counts[change.kind] += 1
            self._spools[change.kind].write(json.dumps(change.to_json(), ensure_ascii=False) + "\n")
        return self

    def json_lines(self, kind: Kind, limit: int | None = None) -> Iterator[str]:
        """The verdicts of one kind as JSON objects (one a line), in URL (SURT) order."""
        spool = self._spools.get(kind)
        if spool is None:
            return
        spool.seek(0)
        yield from itertools.islice(spool, limit)

    def changes(self, kind: Kind, limit: int | None = None) -> Iterator[Change]:
        """The verdicts of one kind, in URL (SURT) order, read back from the spool."""
        for line in self.json_lines(kind, limit):
            item = json.loads(line)
            url = item["url"]
            older = _capture_from_json(url, item["older"])
            newer = _capture_from_json(url, item["newer"])
            yield Change(kind, url, item["how"], older, newer)

    def close(self) -> None:
        for spool in self._spools.values():
            spool.close()
        self._spools.clear()

    def __enter__(self) -> Comparison:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plan(archive: Path, since: datetime | None = None, crawl: int | None = None) -> Comparison:
    """Which captures to compare: the last two crawls (or `crawl` and the one before it),
    or the captures before and since `since`.

    An archive without a history file (made before crawls were numbered) is one crawl:
    comparing needs `since`.  The newer side's "not reached" is only claimed when the
    crawl that made it finished its queue.
    """
    runs = read_history(archive)
    history = bool(runs)
    if since is not None:
        cut = timestamp_of(since)
        ends: list[datetime | None] = [run.started for run in runs[1:]]
        ends.append(None)
        newer_runs = tuple(
            run
            for run, end in zip(runs, ends, strict=False)
            if (end is None or end > since) and (run.finished is None or run.finished >= since)
        )
        older_runs = tuple(run for run in runs if run.started < since)
        complete = bool(runs) and runs[-1].complete and runs[-1].started >= since
        return Comparison(
            archive,
            history,
            runs,
            Span("", cut, older_runs),
            Span(cut, None, newer_runs),
            complete,
            since,
        )
    if crawl is None:
        position = len(runs) - 1
    else:
        numbers = [run.number for run in runs]
        if crawl not in numbers:
            known = f"crawls {numbers[0]} to {numbers[-1]}" if numbers else "no numbered crawl"
            raise UsageError(f"{archive} has no crawl {crawl} ({known})")
        position = numbers.index(crawl)
    if position < 1:
        whole = Span("", None, tuple(runs[:1]))
        return Comparison(archive, history, runs, None, whole, bool(runs) and runs[0].complete)
    previous, current = runs[position - 1], runs[position]
    end = timestamp_of(runs[position + 1].started) if position + 1 < len(runs) else None
    older = Span(timestamp_of(previous.started), timestamp_of(current.started), (previous,))
    newer = Span(timestamp_of(current.started), end, (current,))
    return Comparison(archive, history, runs, older, newer, current.complete)
