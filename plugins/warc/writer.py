"""The per-run WARC writer: hooks that archive every HTTP exchange of a crawl.

`configure` (in ``__init__``) registers one `WarcWriter` per run.  The records are built,
compressed and written by a process of its own (worker.py), fed through a pipe: record
building and zlib then run on another core without taking the crawl's GIL, and the event
loop only pickles each page (20-40 us), sends the pages of one loop turn in one write and
reads the answers, which come a group of pages at a time.  A semaphore bounds the pages in
flight, so a slow disk slows the crawl instead of filling memory.  `page_fetched` returns
only once the worker answered that its records are written (and fsynced when asked): the
core marks the URL done after that, so a crash never loses a page the frontier believes
archived.

Memory stays flat however long the crawl: the payloads already stored (for revisits) are
in an SQLite table on disk (dedup.py) and each file's CDXJ lines go to disk as the records
are written (warcfile.py).  The worker handles pages one after the other, so two identical
payloads become one response and one revisit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from archiver.api import SECTIONS, WARC_FOLDER, ArchiveError, Config, Crawl, Link, Page, hookimpl

from .records import warcinfo_fields
from .settings import WarcSettings
from .stored import UpdateLookup
from .worker import PIPE_SIZE, frame, page_message, split_frames

log = logging.getLogger(__name__)

_SUMMARY_SKIP = {"roots", "output", "user_agent"}


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
    # an archive made without checking certificates may hold what an impostor served
    lines.append(("session.check_certificate", str(config.check_certificate)))
    if config.ca_certificate:
        lines.append(("session.ca_certificate", config.ca_certificate))
    return lines


class WriterProcess:
    """The crawl's end of the pipe to worker.py: numbered requests, answers matched by number.

    The frames sent during one turn of the event loop go in one write, and the worker
    answers a group of pages in one frame: a few system calls a group instead of four a page.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._seq = itertools.count()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._failure: ArchiveError | None = None
        self._outbox: list[bytes] = []
        self._reader = asyncio.create_task(self._read_answers())
        assert process.stdin is not None
        _widen(process.stdin)

    @classmethod
    async def spawn(cls) -> WriterProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "archiver_plugins.warc.worker",
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process)

    def send(self, kind: str, *args: Any) -> asyncio.Future[Any]:
        """Queue a request (the pipe keeps the order); the future gets its answer."""
        seq = next(self._seq)
        return self._send(seq, frame((kind, seq, *args)))

    def send_page(
        self,
        page: Page,
        links: Sequence[Link],
        refers_to: tuple[str, str, str | None, str | None] | None = None,
        whole: bool = False,
    ) -> asyncio.Future[Any]:
        seq = next(self._seq)
        return self._send(seq, page_message(seq, page, links, refers_to, whole))

    def _send(self, seq: int, data: bytes) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if self._failure is not None:
            future.set_exception(self._failure)
            return future
        self._pending[seq] = future
        if not self._outbox:
            loop.call_soon(self._flush)
        self._outbox.append(data)
        return future

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, []
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            return  # the worker is gone: `_read_answers` fails the pending futures
        stdin.write(b"".join(outbox))

    async def settle(self, future: asyncio.Future[Any]) -> Any:
        """Wait for the pipe to take the request, then for its answer."""
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError):  # the worker died: its answer says so
            await self.process.stdin.drain()
        return await future

    async def _read_answers(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        buffer = bytearray()
        while True:
            chunk = await stdout.read(1 << 20)
            if not chunk:
                break
            buffer += chunk
            for _kind, answers, logs in split_frames(buffer):
                for level, name, message in logs:
                    logging.getLogger(name).log(level, "%s", message)
                for status, seq, result in answers:
                    future = self._pending.pop(seq, None)
                    if future is None or future.done():
                        continue
                    if status == "ok":
                        future.set_result(result)
                    else:
                        future.set_exception(ArchiveError(str(result)))
        code = await self.process.wait()
        self._failure = ArchiveError(f"the WARC writer process exited (code {code})")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self._failure)
        self._pending.clear()

    async def finish(self) -> None:
        """Close the pipe and wait for the process (after ``close`` was answered)."""
        if self._outbox:
            self._flush()
        if self.process.stdin is not None:
            self.process.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            await self.process.wait()
        await self._reader


class WarcWriter:
    """Writes ``ARCHIVE/warc/*.warc.gz`` for one crawl; registered by `configure`."""

    def __init__(self, settings: WarcSettings, stored: UpdateLookup | None = None) -> None:
        self.settings = settings
        self.stored = stored
        """The archive's latest captures during an update: what a 304 revisit points at."""
        self._process: WriterProcess | None = None
        self._slots: asyncio.Semaphore | None = None

    # -- hooks -------------------------------------------------------------------------

    @hookimpl
    async def crawl_started(self, crawl: Crawl) -> None:
        self._slots = asyncio.Semaphore(self.settings.queue_size)
        fields = warcinfo_fields(config_summary(crawl.config), crawl.roots)
        process = await WriterProcess.spawn()
        self._process = process
        started = process.send("start", crawl.archive / WARC_FOLDER, self.settings, fields, os.getpid())
        try:
            await process.settle(started)
        except BaseException:
            self._process = None
            await process.finish()
            raise

    @hookimpl
    async def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        process = self._process
        if process is None or self._slots is None:
            raise ArchiveError("WARC writer used before crawl_started")
        refers_to = None
        if page.unchanged and page.status == 304 and self.stored is not None:
            refers_to = self.stored.refers_to(page.url)
        whole = self.stored is not None and self.stored.damaged(page.url)
        async with self._slots:
            # Once sent, a page is written even if this task is cancelled (its answer is then
            # dropped); a later ``close`` is still handled after it: the pipe keeps the order.
            records, size, revisit = await process.settle(process.send_page(page, links, refers_to, whole))
        crawl.stats["warc.records"] += records
        crawl.stats["warc.bytes"] += size
        if revisit:
            crawl.stats["warc.revisits"] += 1

    @hookimpl
    async def page_rendered(self, page: Page, dom: str, screenshot: bytes | None, crawl: Crawl) -> None:
        """The rendered DOM and the screenshot as resource records, named as Browsertrix names them."""
        process = self._process
        if process is None or self._slots is None:
            raise ArchiveError("WARC writer used before crawl_started")
        parts = [(f"urn:dom:{page.url}", "text/html; charset=utf-8", dom.encode("utf-8", "replace"))]
        if screenshot:
            parts.append((f"urn:screenshot:{page.url}", "image/png", screenshot))
        moment = datetime.now(UTC).isoformat()
        async with self._slots:
            records, size = await process.settle(process.send("resources", parts, moment))
        crawl.stats["warc.records"] += records
        crawl.stats["warc.bytes"] += size

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            # Answered after every page sent before it, so no write is cut off.
            files = await _to_the_end(process.settle(process.send("close")))
        finally:
            await process.finish()
        crawl.stats["warc.files"] = files


def _widen(stdin: asyncio.StreamWriter) -> None:
    """Give the pipe room for dozens of pages (Linux), so the crawl seldom waits on it."""
    try:
        import fcntl
    except ImportError:
        return
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    pipe = stdin.get_extra_info("pipe")
    if setsize is None or pipe is None:
        return
    with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: keep the default
        fcntl.fcntl(pipe.fileno(), setsize, PIPE_SIZE)


async def _to_the_end(work: Any) -> Any:
    """Await `work` to its end even when the caller is cancelled: the files must be closed."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise
