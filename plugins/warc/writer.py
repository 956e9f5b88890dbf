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

Memory stays flat however long the crawl: the payloads already stored (for revisits)
are in an SQLite table on disk (dedup.py) and each file's CDXJ lines go to disk as the
records are written (warcfile.py).  Whether a payload is new is decided again on the
writer thread, under the write lock, so two identical payloads built at once still
become one response and one revisit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from archiver.config import SECTIONS, Config
from archiver.errors import ArchiveError
from archiver.hookspecs import hookimpl
from archiver.model import Crawl, Link, Page

from .dedup import DB_NAME, DedupTable
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
        self.dedup: DedupTable | None = None
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
            on_close=self._file_closed,
        )
        crawl.extra["warc.writer"] = self

    @hookimpl
    async def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        if self.rotator is None or self._slots is None or self._lock is None:
            raise ArchiveError("WARC writer used before crawl_started")
        async with self._slots:
            records = await self._built(page, links)
            async with self._lock:
                if not await self._in_thread(self._write, records, True):
                    # an identical payload was written while this one was compressed
                    records = await self._built(page, links)
                    await self._in_thread(self._write, records, False)
        crawl.stats["warc.records"] += len(records.records)
        crawl.stats["warc.bytes"] += records.size
        if any(r.record_type == "revisit" for r in records.records):
            crawl.stats["warc.revisits"] += 1

    @hookimpl
    async def page_rendered(self, page: Page, dom: str, screenshot: bytes | None, crawl: Crawl) -> None:
        """The rendered DOM and the screenshot as resource records, named as Browsertrix names them."""
        if self.rotator is None or self._slots is None or self._lock is None or self._builders is None:
            raise ArchiveError("WARC writer used before crawl_started")
        parts = [(f"urn:dom:{page.url}", "text/html; charset=utf-8", dom.encode("utf-8", "replace"))]
        if screenshot:
            parts.append((f"urn:screenshot:{page.url}", "image/png", screenshot))
        moment = datetime.now(UTC)
        async with self._slots:
            loop = asyncio.get_running_loop()
            records = await loop.run_in_executor(self._builders, self.maker.resources, parts, moment)
            async with self._lock:
                await self._in_thread(self._write, records, False)
        crawl.stats["warc.records"] += len(records.records)
        crawl.stats["warc.bytes"] += records.size

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        if self.rotator is None or self._thread is None:
            return
        # Queued behind every page still being written, so no write is cut off.
        await self._in_thread(self._close)
        self._thread.shutdown(wait=False)
        if self._builders is not None:
            self._builders.shutdown(wait=False)
        crawl.stats["warc.files"] = len(self.rotator.closed)

    async def _built(self, page: Page, links: Sequence[Link]) -> PageRecords:
        assert self._builders is not None
        return await asyncio.get_running_loop().run_in_executor(self._builders, self._build, page, links)

    def _build(self, page: Page, links: Sequence[Link]) -> PageRecords:
        originals = self.dedup if self.dedup is not None else _NONE
        return self.maker.page(
            page, links, originals, dedup=self.settings.dedup, metadata=self.settings.metadata
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
            self.dedup = DedupTable(folder.parent / DB_NAME)
            read = self.dedup.sync(folder)
            if read:
                log.info("dedup table: read the index of %d WARC file(s)", read)

    def _warcinfo(self, filename: str) -> Serialized:
        return self.maker.warcinfo(filename, self._warcinfo_fields)

    def _write(self, records: PageRecords, check: bool) -> bool:
        """Append `records`; with `check`, return False instead when their payload is
        stored already (they must then be rebuilt as a revisit)."""
        assert self.rotator is not None
        dedup, digest, original = self.dedup, records.digest, records.original
        if dedup is None or digest is None or original is None:
            dedup = None  # nothing to look up or note: a revisit, an empty or cut body
        elif check and dedup.get(digest) is not None:
            return False
        try:
            written = self.rotator.write(records)
        except OSError as exc:
            current = self.rotator.current
            where = current.path if current is not None else self.folder
            raise ArchiveError(
                f"cannot write WARC file {where}: {exc.strerror or exc}"
                " (the file was cut back to its last whole record; resume once fixed)"
            ) from exc
        if dedup is not None:
            assert digest is not None and original is not None
            dedup.add(digest, original, written.name)
        return True

    def _file_closed(self, name: str) -> None:
        if self.dedup is not None:
            self.dedup.file_closed(name)

    def _close(self) -> None:
        assert self.rotator is not None
        try:
            self.rotator.close()
        finally:
            if self.dedup is not None:
                self.dedup.close()
                self.dedup = None


_NONE: dict[str, Original] = {}
