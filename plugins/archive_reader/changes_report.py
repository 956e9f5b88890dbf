"""`archiver changes` as text and as JSON, from a `Comparison` that has run.

The text is one headline, one line of counts, then one line per URL with its kind first
(``grep ^changed`` works), the unchanged URLs only when asked for; the JSON is one object
written piece by piece, so the URL lists go from the spool files to the output without being held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from archiver.api import CONFIG_NAME, CrawlRun, plural

from .changes import KINDS, Comparison, Kind, Span


def run_json(run: CrawlRun) -> dict[str, Any]:
    return {
        "crawl": run.number,
        "mode": run.mode,
        "started": run.started.isoformat(),
        "finished": run.finished.isoformat() if run.finished else None,
        "complete": run.complete,
    }


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"


def describe_run(run: CrawlRun) -> str:
    state = "complete" if run.complete else ("unfinished" if run.finished else "interrupted or running")
    return f"crawl {run.number} ({run.mode}, started {_when(run.started)}, {state})"


def headline(comparison: Comparison) -> str:
    """What is compared with what, or why nothing is, in one or two lines."""
    name = comparison.archive
    if comparison.history:
        missing = ""
    elif not (name / CONFIG_NAME).is_file():
        missing = (
            f"{name} holds WARC files imported by `archiver reindex --warc`, made by no crawl of"
            " its own: all its captures count as one crawl (crawl 1).\n"
        )
    else:
        missing = (
            f"{name} has no crawl history (it was made before crawls were numbered):"
            " all its captures count as crawl 1.\n"
        )
    if comparison.since is not None:
        newer = ", ".join(describe_run(run) for run in comparison.newer.crawls) or "no numbered crawl"
        return (
            f"{missing}{name}: captures since {_when(comparison.since)} ({newer})"
            f" against the newest captures before then"
        )
    if not comparison.compared:
        only = f" ({describe_run(comparison.runs[0])})" if comparison.runs else ""
        if len(comparison.runs) > 1:
            return f"{name}: {describe_run(comparison.runs[0])} is the first crawl: nothing came before it."
        return (
            f"{missing}{name} holds one crawl{only}: nothing to compare it with yet."
            " Crawl it again (archiver crawl --recrawl), or give --since TIME to compare"
            " the captures before and after a moment."
        )
    assert comparison.older is not None
    last, previous = comparison.newer.crawls[0], comparison.older.crawls[0]
    return f"{name}: {describe_run(last)} against {describe_run(previous)}"


def count_line(comparison: Comparison) -> str:
    counts = comparison.counts
    parts = [f"{counts[kind]} {kind}" for kind in ("added", "changed", "unchanged", "removed")]
    if counts["unreached"]:
        parts.append(f"{counts['unreached']} not reached yet (the newer crawl is unfinished)")
    return ", ".join(parts)


def listed_kinds(unchanged: bool) -> tuple[Kind, ...]:
    """The kinds whose URLs are listed one by one: after an update most URLs are unchanged,
    and a list of them would bury the few that changed, so they are counted unless asked for."""
    return KINDS if unchanged else tuple(kind for kind in KINDS if kind != "unchanged")


def text_lines(comparison: Comparison, *, unchanged: bool = False) -> Iterator[str]:
    """The human report: headline, counts, then one line per URL (kind first, for grep);
    the unchanged URLs only with `unchanged`."""
    yield headline(comparison)
    if not comparison.compared:
        return
    yield "  " + count_line(comparison)
    hidden = comparison.counts["unchanged"]
    if hidden and not unchanged:
        yield f"  ({plural(hidden, 'unchanged URL')} not listed: --unchanged lists them)"
    for kind in listed_kinds(unchanged):
        for change in comparison.changes(kind):
            label = "unreached" if kind == "unreached" else kind
            when = f" {change.newer.timestamp}" if change.newer is not None else ""
            yield f"{label:<10} {change.url}  ({change.how}{when})"


def _span_json(span: Span | None, complete: bool | None) -> dict[str, Any] | None:
    if span is None:
        return None
    found: dict[str, Any] = {
        "from": span.start or None,
        "until": span.end,
        "crawls": [run_json(run) for run in span.crawls],
    }
    if complete is not None:
        found["complete"] = complete
    return found


def json_chunks(comparison: Comparison, *, unchanged: bool = False) -> Iterator[str]:
    """The `--json` object, written piece by piece so the URL lists never sit in memory;
    the list of unchanged URLs is empty unless `unchanged` (their count is always there)."""
    head = {
        "archive": str(comparison.archive),
        "history": comparison.history,
        "compared": comparison.compared,
        "since": comparison.since.isoformat() if comparison.since else None,
        "older": _span_json(comparison.older, None),
        "newer": _span_json(comparison.newer, comparison.newer_complete),
        "counts": comparison.counts,
    }
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "urls": {'
    for position, kind in enumerate(KINDS):
        yield ("" if position == 0 else ", ") + json.dumps(kind) + ": ["
        if kind not in listed_kinds(unchanged):
            yield "]"
            continue
        for index, line in enumerate(comparison.json_lines(kind)):
            yield ("" if index == 0 else ", ") + line.rstrip("\n")
        yield "]"
    yield "}}"
