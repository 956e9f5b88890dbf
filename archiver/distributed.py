"""Crawling with many processes: `archiver worker` joins a shared crawl, `archiver merge` joins archives.

A crawl shared through Redis is seeded by `archiver crawl ... --frontier redis://...
--crawl-id NAME`, which stores its configuration in Redis; `archiver worker` reads it
back, so every worker has the same roots, scope and limits and needs only the Redis
URL, the crawl's name and its own archive folder.  Each process writes its own archive
(one writer per folder), and `archiver merge` gathers them into one: WARC files linked
(or copied), their CDXJ indexes merged into one sorted ``index.cdxj``, crawl logs and
reports combined, and the plugins' derived data (the full-text index) rebuilt through
the `archive_merged` hook.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import shutil
import time
import tomllib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pluggy

from .archive import CONFIG_NAME, dump_toml
from .config import Config, flatten_tables, load_config
from .crawllog import LOG_NAME, REPORT_NAME
from .errors import ArchiveError, UsageError
from .lock import ArchiveLock, is_locked, read_holder

if TYPE_CHECKING:
    from .status import ArchiveStatus

# redis (and the Redis frontier) are imported by the functions that talk to Redis: the
# command line imports this module for `worker` and `merge`, and every command would
# otherwise pay for the redis client at start-up.

log = logging.getLogger(__name__)

WARC_SUFFIXES = (".warc.gz", ".warc")
OPEN_SUFFIX = ".open"
MERGED_CDXJ = "index.cdxj"
REDIS_SCHEMES = ("redis://", "rediss://")


def is_shared(frontier: str) -> bool:
    return frontier.startswith(REDIS_SCHEMES)


# -- reading a shared crawl from Redis ---------------------------------------------------


def _read(url: str, crawl_id: str, with_workers: bool = False) -> dict[str, Any]:
    """A crawl's configuration and totals, with a blocking client (callable from any context)."""
    import redis

    from .frontier_redis import (
        CONNECT_TIMEOUT,
        CONNECTION_ERRORS,
        FrontierUnavailableError,
        counts_from,
        prefix_for,
        redacted,
    )

    client = redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=CONNECT_TIMEOUT, decode_responses=True
    )
    prefix = prefix_for(crawl_id)
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.get(prefix + "config")
            pipe.hgetall(prefix + "counts")
            pipe.zcard(prefix + "leases")
            pipe.scard(prefix + "seen")
            pipe.hgetall(prefix + "workers" if with_workers else prefix + "none")
            config, totals, leases, seen, workers = pipe.execute()
    except CONNECTION_ERRORS as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FrontierUnavailableError(
            f"cannot reach the Redis frontier at {redacted(url)}: {reason}"
        ) from None
    finally:
        client.close()
    return {
        "config": config,
        "counts": counts_from(totals, leases, seen),
        "workers": {name: json.loads(value) for name, value in workers.items()},
        "lost": int(totals.get("lost", 0)),
        "requeued": int(totals.get("requeued", 0)),
    }


def shared_config(url: str, crawl_id: str, overrides: dict[str, Any]) -> Config:
    """The configuration the crawl `crawl_id` stored in Redis, with this worker's overrides."""
    from .frontier_redis import redacted

    found = _read(url, crawl_id)
    if found["config"] is None:
        raise UsageError(
            f"no crawl {crawl_id!r} in the Redis frontier at {redacted(url)}: start it with"
            f" `archiver crawl URL -o ARCHIVE --frontier {redacted(url)} --crawl-id {crawl_id}`"
        )
    tables = tomllib.loads(found["config"])
    values = flatten_tables(tables, source=f"crawl {crawl_id!r} in Redis")
    return load_config(None, {**values, **overrides, "frontier": url, "crawl_id": crawl_id})


def saved_shared_crawl(archive: Path) -> dict[str, Any] | None:
    """The configuration tables saved in `archive` when its crawl used a Redis frontier, else None."""
    try:
        with (archive / CONFIG_NAME).open("rb") as handle:
            tables = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    crawl = tables.get("crawl")
    if isinstance(crawl, dict) and is_shared(str(crawl.get("frontier", ""))):
        return tables
    return None


def shared_status(archive: Path, config: dict[str, Any], status: ArchiveStatus) -> ArchiveStatus:
    """Fill `status` of a worker's archive with the whole shared crawl's progress."""
    from .frontier_redis import FrontierUnavailableError, redacted
    from .status import COMPLETE, RESUMABLE, RUNNING

    crawl = config.get("crawl", {})
    url, crawl_id = str(crawl.get("frontier", "")), str(crawl.get("crawl_id", ""))
    status.frontier = "redis"
    status.shared = {"frontier": redacted(url), "crawl_id": crawl_id}
    try:
        found = _read(url, crawl_id, with_workers=True)
    except FrontierUnavailableError as exc:
        status.shared["error"] = str(exc)
        return status
    counts = found["counts"]
    status.counts = counts
    now = time.time()
    lease = float(crawl.get("lease_seconds", 30.0))
    status.shared["workers"] = sorted(
        f"{w.get('host', '?')} PID {w.get('pid', '?')}: {w.get('pages', 0)} pages"
        for w in found["workers"].values()
        if now - float(w.get("seen_at", 0)) < 2 * lease
    )
    status.shared["lost_leases"] = found["lost"]
    status.shared["requeued"] = found["requeued"]
    if status.state != RUNNING:
        finished = counts.seen > 0 and counts.queued == 0 and counts.in_flight == 0
        status.state = COMPLETE if finished else RESUMABLE
    return status


def describe_shared(status: ArchiveStatus) -> list[str]:
    """The lines `archiver status` prints for a worker's archive of a shared crawl."""
    from .status import COMPLETE, RUNNING

    shared, c, name = status.shared, status.counts, status.archive
    where = f"crawl {shared.get('crawl_id')!r} at {shared.get('frontier')}"
    if status.state == RUNNING:
        holder = status.holder.describe() if status.holder else "another process"
        head = f"{name}: worker running ({holder}) in {where}"
    elif status.state == COMPLETE:
        head = f"{name}: worker of {where}, which is complete"
    else:
        head = f"{name}: worker of {where}, unfinished: `archiver worker` rejoins it"
    lines = [head]
    if "error" in shared:
        lines.append(f"  {shared['error']}")
        return lines
    lines.append(
        f"  whole crawl: done {c.done}, queued {c.queued}, failed {c.failed}, in flight {c.in_flight}"
    )
    workers = shared.get("workers", [])
    lines.append(f"  workers alive: {len(workers)}" + "".join(f"\n    {w}" for w in workers))
    if shared.get("requeued"):
        lines.append(f"  leases taken back from stopped workers: {shared['requeued']}")
    return lines


# -- archiver worker ---------------------------------------------------------------------


@click.command("worker")
@click.option("--frontier", required=True, metavar="redis://HOST:PORT/DB", help="The crawl's Redis server.")
@click.option("--crawl-id", required=True, metavar="NAME", help="The name the crawl was started with.")
@click.option("-o", "--output", required=True, metavar="ARCHIVE", help="This worker's own archive folder.")
@click.option("--max-tasks", type=int, help="Concurrent fetches in this process (default: the crawl's).")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE", help="Also load this plugin module.")
@click.option("--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Do not load this plugin.")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr; no progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print this worker's report as JSON.")
def worker_command(
    frontier: str,
    crawl_id: str,
    output: str,
    max_tasks: int | None,
    plugins: Sequence[str],
    disabled: Sequence[str],
    verbose: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Join the crawl CRAWL-ID shared through a Redis frontier, writing into ARCHIVE.

    The crawl is started elsewhere with `archiver crawl URL --frontier redis://... --crawl-id
    NAME`; the worker reads its configuration from Redis, takes URLs until the whole crawl
    is done, and writes WARC files named after this host and process.  Run it again
    after a crash to rejoin; combine the archives with `archiver merge`.
    """
    from .runner import crawl_and_report, setup_logging

    setup_logging(verbose, quiet or as_json)
    if not is_shared(frontier):
        raise UsageError(f"--frontier must be a redis:// URL, got {frontier!r}")
    overrides: dict[str, Any] = {"output": output}
    if max_tasks is not None:
        overrides["max_tasks"] = max_tasks
    config = shared_config(frontier, crawl_id, overrides)
    config = config.replace(enable=(*config.enable, *plugins), disable=(*config.disable, *disabled))
    from .frontier_redis import CrawlFinishedError

    try:
        crawl_and_report(config, quiet=quiet, as_json=as_json, again=f"rejoin crawl {crawl_id!r}")
    except CrawlFinishedError:
        # Workers are often started in numbers by a script: one that comes after the
        # end has nothing to do and did nothing wrong.
        click.echo(f"Crawl {crawl_id!r} is finished: nothing left for this worker.", err=True)


# -- archiver merge ----------------------------------------------------------------------


@dataclass
class MergeResult:
    archive: Path
    sources: list[Path]
    linked: int = 0
    copied: int = 0
    already: int = 0
    captures: int = 0
    seconds: float = 0.0
    names: list[str] = field(default_factory=list)


def _warc_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    suffixes = (*WARC_SUFFIXES, *(suffix + OPEN_SUFFIX for suffix in WARC_SUFFIXES))
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(suffixes))


def _place(source: Path, target: Path, copy: bool) -> str:
    """Link (or copy) `source` to `target`; 'linked', 'copied' or 'already' (merged before)."""
    closed = target.with_name(target.name.removesuffix(OPEN_SUFFIX))
    if target.exists():
        same = target.samefile(source) or target.stat().st_size == source.stat().st_size
        if not same:
            raise ArchiveError(f"{target} already exists and differs from {source}: not overwritten")
        return "already"
    if closed != target and closed.exists():
        return "already"  # a file left open, closed by an earlier merge
    if not copy and not source.name.endswith(OPEN_SUFFIX):
        try:
            os.link(source, target)
            return "linked"
        except OSError:
            pass
    tmp = target.with_name(target.name + ".part")
    shutil.copy2(source, tmp)
    os.replace(tmp, target)
    return "copied"


def _cdxj_for(warc: Path) -> Path:
    name = warc.name.removesuffix(OPEN_SUFFIX)
    for suffix in WARC_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return warc.with_name(name + ".cdxj")


def _merged_lines(paths: Sequence[Path]) -> Iterator[str]:
    with ExitStack() as stack:
        handles = [stack.enter_context(p.open(encoding="utf-8")) for p in paths]
        seen_last = None
        for line in heapq.merge(*handles):
            if line != seen_last and line.strip():
                yield line if line.endswith("\n") else line + "\n"
            seen_last = line


def _shared_crawl_of(sources: Sequence[Path]) -> tuple[str, str] | None:
    """(Redis URL, crawl id) of the shared crawl the sources were workers of, if any."""
    for source in sources:
        tables = saved_shared_crawl(source)
        if tables is not None:
            crawl = tables.get("crawl", {})
            return str(crawl.get("frontier", "")), str(crawl.get("crawl_id", ""))
    return None


def _shared_totals(sources: Sequence[Path]) -> dict[str, Any] | None:
    """The shared crawl's own totals and state, from Redis.

    A worker killed with SIGKILL writes no report, so the workers' reports alone
    undercount; Redis counted every URL done, whoever did it.
    """
    found = _shared_crawl_of(sources)
    if found is None:
        return None
    from .frontier_redis import FrontierUnavailableError, redacted

    url, crawl_id = found
    shared: dict[str, Any] = {"frontier": redacted(url), "crawl_id": crawl_id}
    try:
        counts = _read(url, crawl_id)["counts"]
    except FrontierUnavailableError as exc:
        log.warning("%s: the merged report sums the workers' reports only", exc)
        shared["error"] = str(exc)
        return shared
    shared.update(
        done=counts.done,
        failed=counts.failed,
        queued=counts.queued,
        in_flight=counts.in_flight,
        complete=counts.seen > 0 and counts.queued == 0 and counts.in_flight == 0,
    )
    return shared


def _merge_reports(archive: Path, sources: Sequence[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "archive": str(archive),
        "merged_from": [str(s) for s in sources],
        "complete": True,
    }
    without_report: list[str] = []
    totals: Counter[str] = Counter()
    tables: dict[str, Counter[str]] = {}
    starts: list[str] = []
    ends: list[str] = []
    roots: list[str] = []
    for source in sources:
        try:
            report = json.loads((source / REPORT_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            merged["complete"] = False
            without_report.append(str(source))
            continue
        merged["complete"] = merged["complete"] and bool(report.get("complete"))
        for key in ("pages", "failed", "bytes", "redirects", "retries"):
            totals[key] += int(report.get(key, 0))
        for key in ("by_status_class", "errors_by_kind", "skipped_by_reason", "plugins"):
            tables.setdefault(key, Counter()).update(report.get(key) or {})
        starts.append(report.get("started_at", ""))
        ends.append(report.get("finished_at", ""))
        roots.extend(r for r in report.get("roots", []) if r not in roots)
    merged.update(totals)
    merged.update({key: dict(sorted(value.items())) for key, value in tables.items()})
    merged["roots"] = roots
    if starts:
        merged["started_at"], merged["finished_at"] = min(starts), max(ends)
    if without_report:
        merged["without_report"] = without_report  # killed: their pages are in the WARC files
    shared = _shared_totals(sources)
    if shared is not None:
        merged["shared"] = shared
        if "error" not in shared:
            # Redis counts a URL `done` or `failed` once, whichever worker handled it.
            merged["pages"], merged["failed"] = shared["done"], shared["failed"]
            merged["complete"] = shared["complete"]
    return merged


def merge_archives(
    sources: Sequence[Path],
    archive: Path,
    *,
    copy: bool = False,
    plugin_manager: pluggy.PluginManager | None = None,
) -> MergeResult:
    """Gather the WARC files of `sources` into `archive`, then merge what derives from them."""
    started = time.monotonic()
    result = MergeResult(archive, list(sources))
    resolved = archive.resolve()
    for source in sources:
        if not source.is_dir():
            raise UsageError(f"no archive at {source}")
        if source.resolve() == resolved:
            raise UsageError(f"{source} is the output: give another folder to -o")
        if not (source / "warc").is_dir() and not (source / CONFIG_NAME).is_file():
            raise UsageError(f"{source} is not an archive (no warc/ folder, no {CONFIG_NAME})")
        if is_locked(source):
            holder = read_holder(source)
            who = holder.describe() if holder else "another process"
            raise ArchiveError(f"{source} is being written by {who}; merge it when its crawl has ended")
    with ArchiveLock(archive):
        folder = archive / "warc"
        folder.mkdir(parents=True, exist_ok=True)
        for source in sources:
            for warc in _warc_files(source / "warc"):
                outcome = _place(warc, folder / warc.name, copy)
                setattr(result, outcome, getattr(result, outcome) + 1)
                result.names.append(warc.name)
                cdxj = _cdxj_for(warc)
                if cdxj.is_file() and not warc.name.endswith(OPEN_SUFFIX):
                    _place(cdxj, folder / cdxj.name, copy)
        _write_shared_files(archive, sources)
        from .manager import Hooks, make_plugin_manager

        Hooks(plugin_manager or make_plugin_manager()).archive_merged(archive, sources)
        cdxj_files = sorted(p for p in folder.glob("*.cdxj"))
        tmp = archive / (MERGED_CDXJ + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            for line in _merged_lines(cdxj_files):
                out.write(line)
                result.captures += 1
        os.replace(tmp, archive / MERGED_CDXJ)
    result.seconds = time.monotonic() - started
    return result


def _write_shared_files(archive: Path, sources: Sequence[Path]) -> None:
    """crawl.toml (the first source's, made local), the crawl logs end to end, one report."""
    first = next((s / CONFIG_NAME for s in sources if (s / CONFIG_NAME).is_file()), None)
    if first is not None:
        with first.open("rb") as handle:
            tables = tomllib.load(handle)
        crawl = tables.setdefault("crawl", {})
        crawl["output"] = str(archive)
        crawl["frontier"] = "memory"  # the merged archive is finished: no frontier to resume
        (archive / CONFIG_NAME).write_text(dump_toml(tables), encoding="utf-8")
    with (archive / (LOG_NAME + ".tmp")).open("wb") as out:
        for source in sources:
            log_path = source / LOG_NAME
            if log_path.is_file():
                with log_path.open("rb") as handle:
                    shutil.copyfileobj(handle, out)
    os.replace(archive / (LOG_NAME + ".tmp"), archive / LOG_NAME)
    report = _merge_reports(archive, sources)
    (archive / REPORT_NAME).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
