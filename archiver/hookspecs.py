"""The hooks a plugin may implement: this module is their reference documentation.

Rules every hook follows:

* Hooks are called with keyword arguments only, so an implementation may accept any
  subset of a hook's arguments, and later versions may add arguments without breaking it.
* Notification hooks (`crawl_started`, `page_fetched`, `page_rendered`, `fetch_failed`,
  `crawl_finished`) and `discover_links` may be ``async def``; the core awaits what they
  return.  Question hooks (`accept_url`, `extract_links`, `prepare_request`, `configure`,
  `register_commands`, `register_routes`) must be plain functions: pluggy would take an un-awaited coroutine
  for an answer.
* Blocking or CPU-heavy work (file writes, compression, indexing) must leave the event
  loop (a thread or a process) through a bounded queue, so a slow plugin slows the crawl
  instead of growing memory.
* An exception raised by a hook stops the crawl cleanly (the archive stays resumable);
  problems with one page's content (broken HTML) are the plugin's to handle.
* pluggy calls the most recently registered implementation first; never depend on the
  order of other plugins, use ``tryfirst``/``trylast`` where order matters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from .config import Config
    from .errors import FetchError
    from .frontier import Frontier
    from .model import Crawl, Link, Page
    from .status import ArchiveStatus

PROJECT_NAME = "archiver"

PLUGIN_SETTINGS = "archiver.plugin_settings"
"""Key of ``click`` context ``meta`` where a plugin's option for ``archiver crawl`` stores its value:
``ctx.meta[PLUGIN_SETTINGS][NAME][KEY]`` overrides ``[plugins.NAME] KEY`` of the configuration."""

FetchRequisite = Callable[[str], Awaitable["Page | None"]]
"""The `fetch` that `discover_links` receives: ``await fetch(url)``."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``archiver`` command line.

    Called once when the CLI starts, before any configuration is read.  `cli` is the
    top-level ``click.Group``; decorate functions with ``@cli.command()`` to add
    commands (``search``, ``serve`` and ``export`` arrive this way), and give
    ``archiver crawl`` an option for one of the plugin's settings with
    ``archiver.api.add_crawl_option`` (``--browser`` arrives this way).
    """


@hookspec
def register_routes() -> Iterable[Any] | None:
    """Add pages to the web application of ``archiver serve`` (as datasette's ``register_routes``).

    Called each time the application is made.  Return aiohttp route definitions, such as
    ``[aiohttp.web.get("/qa", qa_page)]``; a handler finds the archives served in
    ``request.app[LIBRARY]`` and renders with ``render`` (both from the bundled replay
    library's ``templating`` module).  The bundled plugins add their pages this way: the
    search page of `web`, the report of `qa`.  A path the application already answers
    cannot be taken.  Must be sync.
    """


@hookspec
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    """Validate this plugin's settings and set up per-run objects.

    Called once after the configuration is loaded and disabled plugins are blocked,
    before a crawl starts.  `config` is the effective, frozen configuration; read your
    own table, checked against your settings dataclass, with
    ``config.plugin_settings("NAME", Settings)``: a bad key or value raises
    ``archiver.ConfigError``.  `pm` is the plugin manager: a plugin may ``pm.register()``
    an object holding per-run state (as pytest's junitxml does).
    """


@hookspec(firstresult=True)
def make_frontier(config: Config, archive: Path) -> Frontier | None:
    """Make the frontier ``config.frontier`` names, when this plugin provides it.

    Called once per crawl, after `configure`; `archive` is the archive folder.  Return an
    ``archiver.api.Frontier`` for a ``config.frontier`` URL this plugin serves (the
    redis plugin answers ``redis://`` and ``rediss://``), else None; with no answer the core
    makes its own (``"memory"``, ``"sqlite"``) or refuses the name.  Raise
    ``archiver.ConfigError`` when it cannot be made (a client library not installed).
    Must be sync.
    """


@hookspec
def crawl_started(crawl: Crawl) -> None:
    """The crawl is about to fetch its first URL (also on a resumed crawl).

    Called once, inside the running event loop.  `crawl` carries the configuration,
    the archive folder, the root URLs, the counters, and ``crawl.resumed``.  Open files
    and start writers here.  May be ``async def``.
    """


@hookspec(firstresult=True)
def accept_url(url: str, referrer: str | None, crawl: Crawl) -> bool | None:
    """Decide whether a candidate URL joins the frontier.

    Called for each candidate (root, link or redirect target) that passed the core's own
    scope, limit and already-seen checks.  `url` is absolute without fragment; `referrer`
    is the page that linked it (None for roots); `crawl` is the running crawl.  Return
    ``False`` to drop it, ``True`` to keep it, ``None`` for no opinion; the first
    non-None answer wins.  Must be sync.
    """


@hookspec
def prepare_request(url: str, headers: MutableMapping[str, str], crawl: Crawl) -> None:
    """Adjust the request headers just before `url` is fetched.

    Called before every fetch attempt; `headers` is the mapping that will be sent
    (User-Agent, Accept, Accept-Encoding, ...): change it in place.  `crawl` is the
    running crawl.  Must be sync.
    """


@hookspec
def extract_links(page: Page, crawl: Crawl) -> Iterable[Link | str] | None:
    """Return the links found in a fetched page.

    Called for every `page` that is not a redirect, whatever its status, before
    `page_fetched` (which receives the merged result); `crawl` holds the configuration
    (``crawl.config.max_links_per_page``) and the counters.  Return absolute URLs: plain strings count as
    navigational links, ``Link`` records carry their kind (page, requisite, import), which
    decides how far they are followed.  Results of all plugins are merged; the core
    drops fragments, canonicalizes, deduplicates and applies the scope.  Must be sync
    (it is CPU work; keep it fast or bounded).
    """


@hookspec
def page_fetched(page: Page, links: Sequence[Link], crawl: Crawl) -> None:
    """One HTTP exchange completed, whatever its status (3xx, 4xx and 5xx included).

    `page` is the frozen record of the exchange (see ``archiver.Page``).  `links` is
    what `extract_links` found in it (empty for redirects and unparsed types), before
    scope rules: the outlinks a WARC metadata record or a link graph wants.  The URL is
    marked done in the frontier only after every implementation returned, so a writer
    that must not lose the page awaits its own flush before returning.  `crawl` is the
    running crawl.  May be ``async def``.
    """


@hookspec
def discover_links(
    page: Page, links: Sequence[Link], fetch: FetchRequisite, crawl: Crawl
) -> Iterable[Link | str] | None:
    """Return links that only show once more work is done on `page` (a browser running its scripts).

    Called for every `page` that is not a redirect, after `page_fetched`; `links` is what
    `extract_links` found.  What it returns joins the frontier with those links, by the
    same rules.  `fetch` gets what the work needs through the crawl itself:
    ``await fetch(url)`` fetches `url` now as a requisite of `page`, with the crawl's
    politeness, limits, address guard and robots.txt, and the exchange reaches
    `page_fetched` (so the WARC holds it) and the crawl log like any other.  It returns
    that ``Page``, or None when the crawl has seen the URL already (fetched, queued, or
    held from an earlier run: nothing is fetched twice; keep what `page_fetched` showed
    you, or ask `archived_pages`); it raises ``archiver.FetchError`` when the URL is
    refused or fails.  A redirect is returned as it is: fetch its target in turn.
    A ``fetch`` whose caller stops waiting (cancelled) still ends: the URL is fetched,
    archived and logged, and a redirect's target queued.
    The worker waits for this hook, so bound its time.  `crawl` is the running crawl.
    May be ``async def``.
    """


@hookspec
def page_rendered(page: Page, dom: str, screenshot: bytes | None, crawl: Crawl) -> None:
    """A plugin rendered `page` in a browser: keep what the rendering shows.

    `dom` is the document serialized after its scripts ran, `screenshot` a PNG of it (or
    None).  Called by the rendering plugin, after `page_fetched` for the same `page`:
    the WARC plugin stores both as resource records (``urn:dom:URL``,
    ``urn:screenshot:URL``) and the index takes the rendered text when it says more.
    `crawl` is the running crawl.  May be ``async def``.
    """


@hookspec
def fetch_failed(url: str, error: FetchError, crawl: Crawl) -> None:
    """A URL gave no HTTP response after all its tries, or was refused by a limit.

    `url` is the URL as queued; `crawl` is the running crawl.  `error` is an
    ``archiver.FetchError`` with `kind` (``'timeout'``, ``'network'``, ``'dns'``,
    ``'limit'``, ...), `message` and `attempts`.  May be ``async def``.
    """


@hookspec
def crawl_finished(crawl: Crawl) -> None:
    """The crawl ended: the frontier is exhausted, a limit was hit, or it was interrupted.

    Called exactly once, also after errors and Ctrl-C (``crawl.interrupted`` says so),
    with ``crawl.finished_at`` set.  Flush, commit and close here.  May be ``async def``.
    Work that takes long may set ``crawl.finishing`` to a short text (such as
    ``"indexing 1,234 pages..."``) that the progress bar then shows.
    """


@hookspec
def archived_pages(urls: Sequence[str], since: float, crawl: Crawl) -> Iterable[Page] | None:
    """Which of `urls` are already archived whole: asked once when a crawl resumes.

    `urls` were being fetched when the previous run stopped (killed, or cut off after
    Ctrl-C); `since` is when the oldest of them was taken from the queue (a Unix time),
    so nothing stored before it needs looking at.  Called after `crawl_started`, once a
    writer has repaired what the crash left.  Return a ``Page`` (``url``, ``status``,
    ``reason``, ``headers``, ``body`` as stored) for each URL whose response is stored
    whole: the core marks it done and queues its links instead of fetching it again,
    so no capture is duplicated.  `crawl` is the resumed run.  May be ``async def``;
    blocking reads go to a thread.
    """


@hookspec
def archive_merged(archive: Any, sources: Sequence[Any], copy: bool) -> Mapping[str, Any] | None:
    """``archiver merge`` combines the archives `sources` into `archive`: bring your files over.

    `archive` is the merged archive folder and `sources` the archive folders merged into
    it (``pathlib.Path`` objects); the core has written the merged crawl log, report and
    ``crawl.toml`` already.  Link (or, with `copy`, copy) your own files, close what a
    killed crawl left open, rebuild indexes or other derived data here: the WARC plugin
    runs ``tryfirst`` and gathers the WARC files (a file a killed crawl left open closed
    and indexed), so later implementations see the merged WARC folder.  Return counts of
    what was done, added to ``archiver merge --json``; a ``"summary"`` key holds the words
    ``archiver merge`` prints.  Called outside any event loop; must be sync; may take long.
    """


@hookspec
def archive_status(archive: Any, status: ArchiveStatus | None) -> Iterable[tuple[str, Any]] | None:
    """Contribute lines to ``archiver status ARCHIVE``.

    `archive` is the archive folder (a ``pathlib.Path``).  Return ``(label, value)``
    pairs, e.g. ``[("index lag", 12)]``, or None.  `status` is what the core read (its
    state, counts and frontier): a plugin whose frontier kept the crawl elsewhere fills
    it in (the redis plugin asks Redis).  Must be sync and cheap.
    """


@hookspec(firstresult=True)
def stored_page(url: str, crawl: Crawl) -> Page | None:
    """The latest capture of `url` stored in the archive, as a ``Page``, or None.

    Asked during ``crawl --update`` when the server answered ``304 Not Modified`` to a
    conditional request for `url`: the crawl then goes on through the links of the stored
    page (an unchanged page still leads to the pages it links to).  Return ``url``,
    ``status``, ``reason``, ``headers`` and ``body`` as stored; None when nothing usable is
    stored (the 304 is then recorded as it came and leads nowhere).  `crawl` is the running
    crawl.  May be ``async def``; blocking reads go to a thread.
    """


@hookspec(firstresult=True)
def same_as_stored(page: Page, crawl: Crawl) -> bool | None:
    """Whether the archive's latest capture of ``page.url`` has the same payload as `page`.

    Asked during ``crawl --update`` for each response that is not a 304: True marks the
    page ``unchanged``, so plugins deriving data from content skip it.  None for no
    opinion.  `crawl` is the running crawl.  May be ``async def`` (to check that the stored
    copy still reads whole); blocking reads go to a thread.
    """
