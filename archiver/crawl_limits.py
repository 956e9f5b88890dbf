"""The crawl's limits of time, bytes and disk: one that is reached stops the crawl as Ctrl-C does.

`max_time` and `min_free_disk` are checked once a second, and the free disk space again
after each MiB received, however fast it comes; `max_bytes` is counted per page.  Earlier
runs of a resumed crawl count toward the limits, so resuming with the same limit stops at
once and resuming with a higher one goes on.  (`max_pages` is the frontier's: the seen set
stops growing.)
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from . import history
from .model import Crawl
from .units import human_duration, size

log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
DISK_CHECK_BYTES = 1 << 20
"""The free disk space is also checked after each MiB received, however fast it comes."""


class CrawlLimits:
    """Watches `crawl.config`'s limits; `stopping` is set, with the reason in `crawl.limit`."""

    def __init__(self, crawl: Crawl, archive: Path, stopping: asyncio.Event) -> None:
        self.crawl = crawl
        self.archive = archive
        self.stopping = stopping
        self.earlier = history.CrawlRun(0, "crawl", datetime.now(UTC))
        """This crawl's earlier runs: what they received and how long they ran count toward the limits."""
        self._unchecked_bytes = 0

    def reach(self, reason: str) -> None:
        """Stop as Ctrl-C does (in-flight fetches finish, the archive stays resumable), saying why."""
        if self.crawl.limit is not None or self.stopping.is_set():
            return
        log.warning("stopping: %s; finishing in-flight fetches", reason)
        self.crawl.limit = reason
        self.stopping.set()

    async def watch(self, started: float) -> None:
        """Check the time and disk limits once a second (the byte limit is checked per page)."""
        self.count_bytes(0)  # the earlier runs may have reached the byte limit already
        while True:
            config = self.crawl.config
            if config.max_time:
                ran = self.earlier.seconds + time.monotonic() - started
                if ran >= config.max_time:
                    earlier = " (with the earlier runs of this crawl)" if self.earlier.seconds else ""
                    self.reach(f"max_time {human_duration(config.max_time)} reached{earlier}")
            self.check_disk()
            await asyncio.sleep(CHECK_SECONDS)

    def check_disk(self) -> None:
        self._unchecked_bytes = 0
        floor = self.crawl.config.min_free_disk
        if floor:
            free = shutil.disk_usage(self.archive).free
            if free < floor:
                self.reach(
                    f"min_free_disk: {size(free)} free on the archive's file system,"
                    f" under the floor of {size(floor)}"
                )

    def count_bytes(self, received: int) -> None:
        stats = self.crawl.stats
        stats["bytes"] += received
        self._unchecked_bytes += received
        if self._unchecked_bytes >= DISK_CHECK_BYTES:  # a fast crawl writes much in a second
            self.check_disk()
        limit = self.crawl.config.max_bytes
        if limit and self.earlier.received + stats["bytes"] >= limit:
            earlier = " (with the earlier runs of this crawl)" if self.earlier.received else ""
            self.reach(f"max_bytes {size(limit)} received{earlier}")
