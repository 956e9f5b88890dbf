"""The per-run WARC writer: hooks that archive every HTTP exchange of a crawl.

`configure` (in ``__init__``) registers one `WarcWriter` per run.  Work is split so
the event loop only schedules: records are built and gzipped by `BUILDERS` threads (zlib
and sha1 release the GIL, so this uses another core), then appended in order by one
writer thread, under a lock.  Only two builders: building a record is also a little
Python, and more threads only fought the event loop for the GIL (the default pool of six
cost 20% more CPU per page for no more pages per second).  A semaphore bounds the pages
in flight, so a slow disk slows the crawl instead of filling memory.  `page_fetched`
returns only once its records are written (and fsynced when asked): the core marks the
URL done after that, so a crash never loses a page the frontier believes archived.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from archiver.config import SECTIONS, Config
from archiver.errors import ArchiveError
from archiver.hookspecs import hookimpl
from archiver.model import Crawl, Link, Page

from .capture import Capture
from .reader import open_archive
from .records import Original, PageRecords, RecordMaker, Serialized, warcinfo_fields
from .settings import WarcSettings
from .warcfile import Rotator, recover_open_files

log = logging.getLogger(__name__)

_SUMMARY_SKIP = {"roots", "output", "user_agent"}

T = TypeVar("T")
BUILDERS = 2
"""Threads that build and compress records at once."""


def config_summary(config: Config) -> list[tuple[str, str]]:
    """``crawl.max_depth: 50``-style warcinfo lines for the settings that shape a crawl."""
    lines = [("http-header-user-agent", config.user_agent)]
    for section in ("crawl", "limits", "politeness"):
        for name in SECTIONS[section]:
            if name in _SUMMARY_SKIP:
                continue
            value = getattr(config, name)
            if isinstance(value, tuple):
                value = " ".join(value)
            lines.append((f"{section}.{name}", str(value)))
    return lines


class WarcWriter:
    """Writes ``ARCHIVE/warc/*.warc.gz`` for one crawl; registered by `configure`."""

    def __init__(self, settings: WarcSettings) -> None:
        self.settings = settings
        self.maker = RecordMaker(settings.gzip, settings.gzip_level)
        self.originals: dict[str, Original] = {}
        self.rotator: Rotator | None = None
        self.folder: Path | None = None
        self._slots: asyncio.Semaphore | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._builders: ThreadPoolExecutor | None = None
        self._lock: asyncio.Lock | None = None
        self._warcinfo_fields: list[tuple[str, str]] = []

    # -- hooks -------------------------------------------------------------------------

    @hookimpl
    async def crawl_started(self, crawl: Crawl) -> None:
        folder = crawl.archive / "warc"
        self.folder = folder
        self._slots = asyncio.Semaphore(self.settings.queue_size)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc-writer")
        self._builders = ThreadPoolExecutor(max_workers=BUILDERS, thread_name_prefix="warc-build")
        self._lock = asyncio.Lock()
        self._warcinfo_fields = warcinfo_fields(config_summary(crawl.config), crawl.roots)
        await asyncio.to_thread(self._prepare_folder, folder)
        self.rotator = Rotator(
            folder,
            self.settings.prefix,
            self.settings.max_size,
            self.settings.gzip,
            self._warcinfo,
            cdxj=self.settings.cdxj,
            fsync=self.settings.fsync,
        )
        crawl.extra["warc.writer"] = self

    @hookimpl
    async def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        if self.rotator is None or self._slots is None or self._lock is None:
            raise ArchiveError("WARC writer used before crawl_started")
        async with self._slots:
            records = await self._built(page, links)
            async with self._lock:
                if records.digest is not None and records.digest in self.originals:
                    # an identical payload was written while this one was compressed
                    records = await self._built(page, links)
                await self._in_thread(self._write, records)
                if records.digest is not None and records.original is not None:
                    self.originals.setdefault(records.digest, records.original)
        crawl.stats["warc.records"] += len(records.records)
        crawl.stats["warc.bytes"] += records.size
        if any(r.record_type == "revisit" for r in records.records):
            crawl.stats["warc.revisits"] += 1

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        if self.rotator is None or self._thread is None:
            return
        # Queued behind every page still being written, so no write is cut off.
        await self._in_thread(self.rotator.close)
        self._thread.shutdown(wait=False)
        if self._builders is not None:
            self._builders.shutdown(wait=False)
        crawl.stats["warc.files"] = len(self.rotator.closed)

    async def _built(self, page: Page, links: Sequence[Link]) -> PageRecords:
        assert self._builders is not None
        return await asyncio.get_running_loop().run_in_executor(self._builders, self._build, page, links)

    def _build(self, page: Page, links: Sequence[Link]) -> PageRecords:
        return self.maker.page(
            page, links, self.originals, dedup=self.settings.dedup, metadata=self.settings.metadata
        )

    async def _in_thread(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work` on the writer thread, to its end even when the caller is cancelled.

        A thread cannot be stopped; letting a cancelled page go while its records are
        still being written would let `crawl_finished` close the file under them.
        """
        assert self._thread is not None
        future = asyncio.get_running_loop().run_in_executor(self._thread, work, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await future
            raise

    # -- worker-thread side ------------------------------------------------------------

    def _prepare_folder(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for path, cut in recover_open_files(folder, cdxj=self.settings.cdxj):
            log.warning("closed %s left open by an earlier run (%d bytes cut)", path.name, cut)
        if self.settings.dedup:
            self.originals.update(_known_payloads(folder))

    def _warcinfo(self, filename: str) -> Serialized:
        return self.maker.warcinfo(filename, self._warcinfo_fields)

    def _write(self, records: PageRecords) -> None:
        assert self.rotator is not None
        try:
            self.rotator.write(records)
        except OSError as exc:
            current = self.rotator.current
            where = current.path if current is not None else self.folder
            raise ArchiveError(
                f"cannot write WARC file {where}: {exc.strerror or exc}"
                " (the file was cut back to its last whole record; resume once fixed)"
            ) from exc


def _known_payloads(folder: Path) -> dict[str, Original]:
    """Payload digests already stored by earlier runs, so a resumed crawl dedups too."""
    originals: dict[str, Original] = {}
    if not any(folder.iterdir()):
        return originals
    for capture in open_archive(folder).iter_captures():
        if capture.digest and not capture.is_revisit and capture.digest not in originals:
            originals[capture.digest] = Original(capture.url, _iso(capture))
    return originals


def _iso(capture: Capture) -> str:
    t = capture.timestamp
    return f"{t[0:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}Z"
