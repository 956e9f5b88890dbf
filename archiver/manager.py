"""Builds the plugin manager and the typed facade the core calls hooks through.

The core never calls ``pm.hook.*`` directly: `Hooks` is the one place that knows which
hooks may be async and awaits them, so that rule is not scattered over call sites.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from . import hookspecs
from .errors import ConfigError
from .model import Link, LinkKind

if TYPE_CHECKING:
    from pathlib import Path

    from .config import Config
    from .errors import FetchError
    from .frontier import Frontier
    from .hookspecs import FetchRequisite
    from .model import Crawl, Page
    from .status import ArchiveStatus

ENTRY_POINT_GROUP = "archiver"
AUTOLOAD_OFF_VARIABLE = "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD"


log = logging.getLogger(__name__)


@functools.cache
def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The installed plugins' entry points (group ``archiver``), read once per process: the
    scan of every installed distribution costs milliseconds, and a command needs it more than once."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def make_plugin_manager(
    *,
    autoload: bool = True,
    plugins: Iterable[object] = (),
    disabled: Iterable[str] = (),
    modules: Iterable[str] = (),
) -> pluggy.PluginManager:
    """A manager with every hook declared and the chosen plugins registered.

    `autoload` loads the entry points of group ``archiver`` (bundled and third-party
    plugins alike) unless ``ARCHIVER_DISABLE_PLUGIN_AUTOLOAD`` is set.  `disabled`
    names entry points to block; `modules` are extra dotted module names to register
    (``--plugin``); `plugins` are objects registered as they are (tests use this).
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    known = {ep.name for ep in entry_points()}
    for name in disabled:
        if autoload and name not in known and name not in modules:
            installed = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"cannot disable plugin {name!r}: no such plugin (installed: {installed})")
        pm.set_blocked(name)
    if autoload and not os.environ.get(AUTOLOAD_OFF_VARIABLE):
        for entry_point in entry_points():
            if pm.is_blocked(entry_point.name) or pm.has_plugin(entry_point.name):
                continue
            try:
                plugin = entry_point.load()
                pm.register(plugin, name=entry_point.name)
            except Exception as exc:
                _skip_broken(entry_point.name, entry_point.value, exc)
    for module_name in modules:
        if pm.is_blocked(module_name) or pm.has_plugin(module_name):
            continue
        if module_name.endswith(".py"):
            file = os.path.basename(module_name)
            raise ConfigError(
                f"cannot load plugin {module_name!r}: --plugin takes a module's name, not its file:"
                f" --plugin {file.removesuffix('.py')} (run from the folder that holds {file})"
            )
        try:
            module = _import_plugin(module_name)
        except ImportError as exc:
            raise ConfigError(f"cannot load plugin {module_name!r}: {exc}") from exc
        if not pm.is_registered(module):
            pm.register(module, name=module_name)
    for plugin in plugins:
        pm.register(plugin)
    while True:
        try:
            pm.check_pending()
            return pm
        except pluggy.PluginValidationError as exc:
            broken = pm.get_name(exc.plugin)
            values = {ep.name: ep.value for ep in entry_points()}
            if broken is None or broken not in values:
                raise ConfigError(f"invalid plugin: {exc}") from exc
            pm.unregister(exc.plugin)
            _skip_broken(broken, values[broken], exc)


def check_plugin_tables(config: Config, pm: pluggy.PluginManager) -> None:
    """ConfigError, in `parse_settings`' format, for a table no loaded plugin reads: a plugin
    name misspelled (``[plugins.wacr]``), or a key of a plugin that takes no settings."""
    from .settings import did_you_mean

    loaded = {name.rsplit(".", 1)[-1] for name, plugin in pm.list_name_plugin() if plugin is not None}
    installed = {ep.name for ep in entry_points()} | loaded
    checked = config.checked_tables()
    for name, table in config.plugins.items():
        if name in checked:
            continue
        if name not in installed:
            hint = did_you_mean(name, installed) or "; `archiver plugins` lists them"
            raise ConfigError(f"[plugins.{name}]: unknown table: no plugin is called {name!r}{hint}")
        if name in loaded and table:
            key = next(iter(table))
            raise ConfigError(f"[plugins.{name}] {key}: unknown key; the {name} plugin takes no settings")


def _import_plugin(module_name: str) -> ModuleType:
    """`--plugin MODULE` also finds a module of the current directory: `python -m` would, but
    the `archiver` script of an installed archiver has only its own folder on `sys.path`, so a
    plugin written beside the archive could not load.  The directory goes last on the path, so
    an installed module of the same name still wins."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.partition(".")[0] or here in sys.path or "" in sys.path:
            raise
        sys.path.append(here)
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError:
            sys.path.remove(here)
            raise exc from None


FAILED_PLUGINS: dict[str, tuple[str, str]] = {}
"""Installed plugins that could not be loaded: name -> (entry point, error), for `archiver plugins`."""


def _skip_broken(name: str, value: str, exc: Exception) -> None:
    """One installed plugin that does not load must not take every command down with it."""
    if name not in FAILED_PLUGINS:
        FAILED_PLUGINS[name] = (value, f"{type(exc).__name__}: {exc}")
        sys.stderr.write(
            f"archiver: warning: plugin {name!r} (entry point {value}) failed to load and is skipped:"
            f" {type(exc).__name__}: {exc}"
            f" (--disable-plugin {name}, or [plugins] disable, stops loading it)\n"
        )


def plugin_versions(pm: pluggy.PluginManager) -> list[tuple[str, str, list[str]]]:
    """(name, version, hooks) for every registered plugin, for ``archiver plugins``."""
    versions = {ep.name: ep.dist.version for ep in entry_points() if ep.dist is not None}
    rows = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        rows.append((name, versions.get(name, ""), hooks))
    return sorted(rows)


async def _resolved(answer: Any) -> Any:
    """A hook's answer, awaited when the implementation was ``async def``."""
    return await answer if inspect.isawaitable(answer) else answer


async def _await_all(results: Iterable[Any], *, every: bool = False) -> None:
    """Await each implementation's answer in order; the first failure is raised.

    With `every`, the others are still awaited first (``crawl_finished``: each plugin
    flushes what it holds even when another one failed).  Answers never started are
    closed, so a failure leaves no coroutine "never awaited" behind.
    """
    answers = list(results)
    failure: Exception | None = None
    try:
        for answer in answers:
            try:
                await _resolved(answer)
            except Exception as exc:
                if not every:
                    raise
                if failure is None:
                    failure = exc
                else:
                    log.debug("a further crawl_finished failure: %s", exc)
    finally:
        for answer in answers:
            if inspect.iscoroutine(answer) and inspect.getcoroutinestate(answer) == inspect.CORO_CREATED:
                answer.close()
    if failure is not None:
        raise failure


class Hooks:
    """Typed calls into the plugins; async notification results are awaited in order."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._hook = pm.hook

    def configure(self, config: Config) -> None:
        """Each plugin checks its own table; then every `[plugins.NAME]` table left must be a
        loaded plugin's, and one whose plugin takes no settings must be empty."""
        self._hook.configure(config=config, pm=self.pm)
        check_plugin_tables(config, self.pm)

    def routes(self) -> list[Any]:
        """The routes every plugin adds to the web application of ``archiver serve``."""
        return [route for answer in self._hook.register_routes() if answer for route in answer]

    async def crawl_started(self, crawl: Crawl) -> None:
        await _await_all(self._hook.crawl_started(crawl=crawl))

    def accept_url(self, url: str, referrer: str | None, crawl: Crawl) -> bool | None:
        answer = self._hook.accept_url(url=url, referrer=referrer, crawl=crawl)
        if answer is None:
            return None
        return bool(answer)

    def url_refused_by(self, url: str, referrer: str | None, crawl: Crawl) -> str | None:
        """The name of the plugin whose `accept_url` answer decides `url`, when it refuses it.

        Asked only after a refusal, to name the plugin in the crawl log: it calls the
        implementations one by one, in pluggy's order, up to the first answer.
        """
        given = {"url": url, "referrer": referrer, "crawl": crawl}
        for impl in reversed(self._hook.accept_url.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                continue
            answer = impl.function(**{name: given[name] for name in impl.argnames})
            if answer is not None:
                return impl.plugin_name if not answer else None
        return None

    def prepare_request(self, url: str, headers: MutableMapping[str, str], crawl: Crawl) -> None:
        self._hook.prepare_request(url=url, headers=headers, crawl=crawl)

    def extract_links(self, page: Page, crawl: Crawl) -> Iterator[Link]:
        for found in self._hook.extract_links(page=page, crawl=crawl):
            if not found:
                continue
            for item in found:
                yield item if isinstance(item, Link) else Link(str(item), LinkKind.PAGE)

    async def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        await _await_all(self._hook.page_fetched(page=page, links=links, crawl=crawl))

    async def discover_links(
        self, page: Page, links: Sequence[Link], fetch: FetchRequisite, crawl: Crawl
    ) -> list[Link]:
        found: list[Link] = []
        for answer in self._hook.discover_links(page=page, links=links, fetch=fetch, crawl=crawl):
            for item in await _resolved(answer) or ():
                found.append(item if isinstance(item, Link) else Link(str(item), LinkKind.PAGE))
        return found

    async def page_rendered(self, page: Page, dom: str, screenshot: bytes | None, crawl: Crawl) -> None:
        await _await_all(self._hook.page_rendered(page=page, dom=dom, screenshot=screenshot, crawl=crawl))

    async def fetch_failed(self, url: str, error: FetchError, crawl: Crawl) -> None:
        await _await_all(self._hook.fetch_failed(url=url, error=error, crawl=crawl))

    async def crawl_finished(self, crawl: Crawl) -> None:
        await _await_all(self._hook.crawl_finished(crawl=crawl), every=True)

    async def archived_pages(self, urls: Sequence[str], since: float, crawl: Crawl) -> list[Page]:
        pages: list[Page] = []
        for found in self._hook.archived_pages(urls=urls, since=since, crawl=crawl):
            pages.extend(await _resolved(found) or ())
        return pages

    async def same_as_stored(self, page: Page, crawl: Crawl) -> bool:
        return bool(await _resolved(self._hook.same_as_stored(page=page, crawl=crawl)))

    async def stored_page(self, url: str, crawl: Crawl) -> Page | None:
        stored: Page | None = await _resolved(self._hook.stored_page(url=url, crawl=crawl))
        return stored

    def make_frontier(self, config: Config, archive: Path) -> Frontier | None:
        frontier: Frontier | None = self._hook.make_frontier(config=config, archive=archive)
        return frontier

    def archive_merged(self, archive: Path, sources: Sequence[Path], copy: bool) -> list[Mapping[str, Any]]:
        answers = self._hook.archive_merged(archive=archive, sources=list(sources), copy=copy)
        return [answer for answer in answers if answer]

    def archive_status(self, archive: Path, status: ArchiveStatus | None = None) -> list[tuple[str, Any]]:
        lines: list[tuple[str, Any]] = []
        for contributed in self._hook.archive_status(archive=archive, status=status):
            if contributed:
                lines.extend(contributed)
        return lines
