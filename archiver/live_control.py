"""Live control of a running crawl: what each verb of `archiver control` does to it.

`control` carries the commands (a file of the archive); this module carries them out.  A
pause, a host pause and a stop close the request gate (`gate`) before they are answered, so
nothing that had not reached the network starts from the answer on; in a shared crawl the
answer waits until every other live process holds too (`Frontier.held_everywhere`).
The queue changes of an `exclude` or `include` are made by the process that received the
command; the others, told through the frontier, change only their own rules and settings.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from . import control
from .config import Config
from .crawl_limits import CrawlLimits
from .crawllog import CrawlLog
from .errors import ArchiverError
from .frontier import Frontier, Holding, Item
from .gate import RequestGate, on_wire_phrase
from .model import Crawl
from .politeness import HostLimiter
from .rules import Rules
from .terminal import note
from .urls import Scope

log = logging.getLogger(__name__)


class Steered(Protocol):
    """What live control changes in a crawl (the `Crawler` is one)."""

    config: Config
    crawl: Crawl
    frontier: Frontier
    limiter: HostLimiter
    gate: RequestGate
    scope: Scope
    rules: Rules
    log: CrawlLog
    limits: CrawlLimits
    running: asyncio.Event
    """Cleared while paused: the workers take no URL."""
    patterns_added: bool

    def save(self, config: Config) -> None:
        """Keep a changed setting in crawl.toml, so that a resume goes on with it."""
        ...

    def set_tasks(self, n: int) -> str: ...

    def skip(self, url: str, reason: str, referrer: str | None, depth: int) -> None: ...


class LiveControl:
    """Applies the commands sent to one crawl, and those other processes of it received."""

    def __init__(self, crawler: Steered) -> None:
        self.crawler = crawler

    async def watch(self, inbox: control.Inbox) -> None:
        """Apply the commands sent to this archive, and those other processes of a shared crawl
        received (the frontier passes them on)."""
        while True:
            for command in inbox.new_commands():
                try:
                    message = await self.apply(command)
                except ArchiverError as exc:
                    inbox.answer(command, False, str(exc))
                    continue
                record = control.as_record(command)
                await self.crawler.frontier.share(record, self.crawler.config)
                if holds(command):
                    # answered once every process of a shared crawl holds
                    message = self.held_message(command, await self.crawler.frontier.held_everywhere(record))
                self._log(command, message)
                inbox.answer(command, True, message)
            for record in await self.crawler.frontier.shared_commands():
                passed_on = control.from_record(record)
                if passed_on is None:
                    continue
                try:
                    self._log(passed_on, await self.apply(passed_on, shared=True))
                except ArchiverError as exc:
                    log.warning("archiver control from another process refused: %s", exc)
                    continue
                if holds(passed_on):
                    await self.crawler.frontier.confirm_held(record, self.on_wire_for(passed_on))
            await asyncio.sleep(control.POLL_SECONDS)

    def on_wire_for(self, command: control.Command) -> int:
        """Requests already sent that `command` (a pause, a host pause, a stop) lets finish."""
        return self.crawler.gate.requests_on_wire(command.args[0] if command.verb == "host" else None)

    def held_message(self, command: control.Command, others: Holding) -> str:
        """The acknowledgement of a pause, a host pause or a stop: what is still on the wire."""
        on_wire = on_wire_phrase(self.on_wire_for(command) + others.on_wire)
        if others.processes:
            on_wire += f" (in {others.processes + 1} processes)"
        if command.verb == "stop":
            message = f"stopping: {on_wire}, then the crawl stops (resumable); nothing new starts"
        elif command.verb == "host":
            host = command.args[0]
            message = self._flagged(host, f"host {host} paused: {on_wire}; nothing new starts")
        else:
            message = f"paused: {on_wire}; nothing new starts"
        if others.silent:
            names = ", ".join(others.silent)
            message += f"; not confirmed by {len(others.silent)} process(es) that may have stopped: {names}"
        return message

    def _flagged(self, host: str, message: str) -> str:
        """`message`, with a word when `host` is no root's: a requisite's host is fetched too, so
        an unknown name is flagged, not refused."""
        if self.crawler.scope.host_allows(f"http://{host}/"):
            return message
        return f"{message}; {host} is not the host of a root (written as URLs write it, port and all?)"

    def _log(self, command: control.Command, message: str) -> None:
        note(log, "archiver control: %s", message)
        event = {"outcome": "control", "verb": command.verb, "args": list(command.args)}
        self.crawler.log.write({**event, "at": command.at, "reason": message})

    async def apply(self, command: control.Command, shared: bool = False) -> str:
        """Carry out one command of `archiver control`; what was done, in words.

        A command another process of a shared crawl received (`shared`) has had its queue
        changes made there: here it only changes this process's rules and settings."""
        verb, args = command.verb, command.args
        control.check(verb, args)
        crawl, config = self.crawler.crawl, self.crawler.config
        if verb == "pause":
            self.crawler.running.clear()
            self.crawler.gate.closed = True
            crawl.paused = True
            return self.held_message(command, Holding())
        if verb == "resume":
            self.crawler.gate.closed = False
            self.crawler.running.set()
            crawl.paused = False
            return "resumed"
        if verb == "stop":
            self.crawler.gate.closed = True
            self.crawler.running.set()
            self.crawler.limits.reach("stopped by `archiver control stop`")
            return self.held_message(command, Holding())
        if verb in ("exclude", "include"):
            return await self._add_pattern(args[0], verb == "exclude", command.at, drop=not shared)
        if verb == "delay":
            seconds = float(args[0])
            self.crawler.limiter.set_delay(seconds)
            self.crawler.save(config.replace(delay=seconds))
            return f"delay {seconds:g} s between two requests to a host"
        if verb == "concurrency":
            n = int(args[0])
            self.crawler.limiter.set_concurrency(n)
            self.crawler.save(config.replace(per_host_concurrency=n))
            return f"concurrency {n} requests at once per host"
        if verb == "tasks":
            return self.crawler.set_tasks(int(args[0]))
        host, action = args
        self.crawler.limiter.hold(host, action == "pause")
        if action == "resume":
            return self._flagged(host, f"host {host} resumed")
        return self.held_message(command, Holding())

    async def _add_pattern(self, pattern: str, exclude: bool, at: str, drop: bool = True) -> str:
        """A new include or exclude pattern: kept, and the queued URLs it refuses dropped (logged)."""
        config = self.crawler.config
        self.crawler.scope.add_pattern(pattern, exclude=exclude)
        self.crawler.patterns_added = True
        if exclude:
            self.crawler.save(config.replace(exclude=(*config.exclude, pattern)))
        else:
            self.crawler.save(config.replace(include=(*config.include, pattern)))
        when = f"added by archiver control at {at}"

        def refusal(item: Item) -> str | None:
            requisite = self.crawler.rules.admits_requisite(item.kind)
            verdict = self.crawler.scope.pattern_verdict(item.url, requisite=requisite)
            return None if verdict is None else f"{verdict} ({when})"

        dropped = await self.crawler.frontier.drop(refusal) if drop else []
        for item, reason in dropped:
            self.crawler.skip(item.url, reason, item.referrer, item.depth)
        verb = "exclude" if exclude else "include"
        return f"{verb} {pattern!r}: {len(dropped):,} queued URLs dropped"


def holds(command: control.Command) -> bool:
    """Whether `command` stops requests from starting: a pause, a host pause, a stop."""
    return command.verb in ("pause", "stop") or (command.verb == "host" and command.args[1:] == ("pause",))
