"""A crawl shared through Redis, read from outside: its configuration for `archiver worker`,
its progress for `archiver status`, its own totals for the report of `archiver merge`.

Everything here uses a blocking client and is callable from any context.
"""

from __future__ import annotations

import json
import logging
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from archiver.api import (
    COMPLETE,
    CONFIG_NAME,
    NOT_RESUMABLE,
    REPORT_NAME,
    RESUMABLE,
    RUNNING,
    ArchiveStatus,
    Config,
    UsageError,
    flatten_tables,
    load_config,
)

from .frontier import (
    CONNECT_TIMEOUT,
    CONNECTION_ERRORS,
    FrontierUnavailableError,
    counts_from,
    prefix_for,
    redacted,
)
from .settings import NAME, saved_settings
from .sharing import saved_shared_crawl

log = logging.getLogger(__name__)


# -- reading a shared crawl from Redis ---------------------------------------------------


def _read(url: str, crawl_id: str, with_workers: bool = False) -> dict[str, Any]:
    """A crawl's configuration and totals."""
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


WAIT_POLL = 0.25
"""Seconds between two looks for a crawl a worker waits for."""


def shared_config(
    url: str,
    crawl_id: str,
    overrides: dict[str, Any],
    wait: float = 0.0,
    waiting: Callable[[], None] | None = None,
) -> Config:
    """The configuration the crawl `crawl_id` stored in Redis, with this worker's overrides.

    Workers are often started together with the crawl, or before it: up to `wait` seconds
    are given for it to appear (`waiting` is called once if it is not there at first).
    """
    deadline = time.monotonic() + wait
    found = _read(url, crawl_id)
    if found["config"] is None and waiting is not None and wait > 0:
        waiting()
    while found["config"] is None and time.monotonic() < deadline:
        time.sleep(min(WAIT_POLL, max(deadline - time.monotonic(), 0.0)))
        found = _read(url, crawl_id)
    if found["config"] is None:
        waited = f" after waiting {wait:g} s" if wait > 0 else ""
        raise UsageError(
            f"no crawl {crawl_id!r} in the Redis frontier at {redacted(url)}{waited}: start it with"
            f" `archiver crawl URL -o ARCHIVE --frontier {redacted(url)} --crawl-id {crawl_id}`"
        )
    tables = tomllib.loads(found["config"])
    values = flatten_tables(tables, source=f"crawl {crawl_id!r} in Redis")
    plugins = {name: dict(table) for name, table in values.pop("plugins", {}).items()}
    plugins.setdefault(NAME, {})["crawl_id"] = crawl_id
    return load_config(None, {**values, **overrides, "frontier": url, "plugins": plugins})


def shared_status(config: dict[str, Any], status: ArchiveStatus) -> None:
    """Fill `status` of a worker's archive with the whole shared crawl's progress and words."""
    url = str(config.get("crawl", {}).get("frontier", ""))
    settings = saved_settings(config, str(Path(status.archive) / CONFIG_NAME))
    crawl_id = settings.crawl_id
    status.frontier = "redis"
    status.shared = {"frontier": redacted(url), "crawl_id": crawl_id}
    if status.state != RUNNING:
        status.state = NOT_RESUMABLE
    try:
        found = _read(url, crawl_id, with_workers=True)
    except FrontierUnavailableError as exc:
        status.shared["error"] = str(exc)
        describe_shared(status)
        return
    counts = found["counts"]
    status.counts = counts
    now = time.time()
    lease = settings.lease_seconds
    status.shared["workers"] = sorted(
        f"{w.get('host', '?')} PID {w.get('pid', '?')}: {w.get('pages', 0)} pages"
        for w in found["workers"].values()
        if now - float(w.get("seen_at", 0)) < 2 * lease
    )
    status.shared["lost_leases"] = found["lost"]
    status.shared["requeued"] = found["requeued"]
    if status.state != RUNNING:
        status.state = COMPLETE if counts.finished else RESUMABLE
    describe_shared(status)


def describe_shared(status: ArchiveStatus) -> None:
    """The lines `archiver status` prints for a worker's archive of a shared crawl."""
    shared, c, name = status.shared, status.counts, status.archive
    where = f"crawl {shared.get('crawl_id')!r} at {shared.get('frontier')}"
    if status.state == RUNNING:
        holder = status.holder.describe() if status.holder else "another process"
        head = f"{name}: worker running ({holder}) in {where}"
    elif status.state == COMPLETE:
        head = f"{name}: worker of {where}, which is complete"
    else:
        head = f"{name}: worker of {where}, unfinished: `archiver worker` rejoins it"
    status.headline = head
    lines = status.details
    if "error" in shared:
        lines.append(f"  {shared['error']}")
        return
    lines.append(
        f"  whole crawl: done {c.done:,}, queued {c.queued:,}, failed {c.failed:,}, in flight {c.in_flight:,}"
    )
    workers = shared.get("workers", [])
    lines.append(f"  workers alive: {len(workers)}" + "".join(f"\n    {w}" for w in workers))
    if shared.get("requeued"):
        lines.append(f"  leases taken back from stopped workers: {shared['requeued']}")


def _shared_crawl_of(sources: Sequence[Path]) -> tuple[str, str] | None:
    """(Redis URL, crawl id) of the shared crawl the sources were workers of, if any."""
    for source in sources:
        tables = saved_shared_crawl(source)
        if tables is not None:
            url = str(tables.get("crawl", {}).get("frontier", ""))
            return url, saved_settings(tables, str(source / CONFIG_NAME)).crawl_id
    return None


def _shared_totals(sources: Sequence[Path]) -> dict[str, Any] | None:
    """The shared crawl's own totals and state, from Redis.

    A worker killed with SIGKILL writes no report, so the workers' reports alone
    undercount; Redis counted every URL done, whoever did it.
    """
    found = _shared_crawl_of(sources)
    if found is None:
        return None
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
        complete=counts.finished,
    )
    return shared


def merge_shared_totals(archive: Path, sources: Sequence[Path]) -> None:
    """Put the shared crawl's own counts and state in the merged archive's report."""
    shared = _shared_totals(sources)
    if shared is None:
        return
    path = archive / REPORT_NAME
    merged = json.loads(path.read_text(encoding="utf-8"))
    merged["shared"] = shared
    if "error" not in shared:
        # Redis counts a URL `done` or `failed` once, whichever worker handled it.
        merged["pages"], merged["failed"] = shared["done"], shared["failed"]
        merged["complete"] = shared["complete"]
    path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
