"""The `archiver` command line: `crawl` and `plugins` here, the rest from plugins.

User mistakes (`ArchiverError`) become one line on stderr and an exit code; Ctrl-C
becomes 130 (SIGTERM 143) after the crawl has flushed what it had.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from . import __version__
from .config import load_config
from .crawllog import build_report
from .errors import ArchiverError, is_read_only, read_only_message
from .manager import Hooks, make_plugin_manager, plugin_versions
from .model import Crawl
from .terminal import PrintableFormatter, echo, printable

if TYPE_CHECKING:
    import asyncio

# Every command starts here, so only what building the command line needs is imported at
# the top: the crawl engine (asyncio, aiohttp) is imported by the commands that crawl.

F = TypeVar("F", bound=Callable[..., Any])

PLUGIN_SETTINGS = "archiver.plugin_settings"
"""Where an option a plugin adds to `crawl` (in `register_commands`) puts its value:
``ctx.meta[PLUGIN_SETTINGS][NAME][KEY]``, which overrides ``[plugins.NAME] KEY``."""

log = logging.getLogger("archiver")


def setup_logging(verbose: int, quiet: bool) -> None:
    level = (
        logging.ERROR
        if quiet
        else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    if level > logging.DEBUG:
        logging.getLogger("asyncio").setLevel(logging.ERROR)


def output_options(func: F) -> F:
    """-v/-q/--json, shared by commands that print."""
    func = click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")(func)
    func = click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr; no progress bar.")(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON result.")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="archiver")
def cli() -> None:
    """Archive whole websites to WARC, browse them offline and search them.

    Start with `archiver crawl URL -o ARCHIVE`, then `archiver search ARCHIVE QUERY`.
    Run `archiver COMMAND --help` for each command's options.
    """


@cli.command()
@click.argument("urls", nargs=-1)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="ARCHIVE",
    help="Archive folder to write (created if missing).",
)
@click.option(
    "-c",
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="TOML config file (see config.example.toml).",
)
@click.option("--max-tasks", type=int, help="Concurrent workers (default 10).")
@click.option("--max-redirect", type=int, help="Redirects followed per chain (default 10).")
@click.option("--max-tries", type=int, help="Attempts per URL on network errors (default 4).")
@click.option("--max-depth", type=int, help="Link distance from a root (default 50).")
@click.option("--max-pages", type=int, help="Stop queueing after this many URLs (0 = no limit).")
@click.option("--include", multiple=True, metavar="REGEX", help="Only follow URLs matching (repeatable).")
@click.option("--exclude", multiple=True, metavar="REGEX", help="Never follow URLs matching (repeatable).")
@click.option(
    "--strict/--lenient",
    default=None,
    help="Host matching: www. only (strict, default) or any subdomain.",
)
@click.option(
    "--requisites/--no-requisites",
    default=None,
    help="Fetch images, CSS, scripts of pages even from other hosts (default on).",
)
@click.option("--user-agent", help="User-Agent header (default names archiver and a contact URL).")
@click.option("--timeout", type=float, help="Seconds allowed for one whole response (default 120).")
@click.option(
    "--delay",
    type=float,
    help="Seconds between two requests to one host (default: robots.txt Crawl-delay, else 0.25).",
)
@click.option("--per-host-concurrency", type=int, help="Requests at once to one host (default 4).")
@click.option("--ignore-robots", is_flag=True, default=None, help="Do not obey robots.txt.")
@click.option("--frontier", help="Where the queue lives: sqlite (default), memory, or redis://HOST:PORT/DB.")
@click.option("--crawl-id", help="Name of a crawl shared through a Redis frontier.")
@click.option(
    "--resume",
    "resume_archive",
    metavar="ARCHIVE",
    help="Continue the interrupted crawl in ARCHIVE with the configuration saved in it.",
)
@click.option("--recrawl", is_flag=True, help="Crawl again into an archive whose crawl is complete.")
@click.option(
    "--update",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ARCHIVE]",
    help="Crawl again from the roots asking only for what changed (conditional requests);"
    " --update ARCHIVE alone uses the settings saved in ARCHIVE.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Fetch only robots.txt; say for each root which rules admit it, and write nothing.",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    help="Also load this plugin module (repeatable).",
)
@click.option(
    "--disable-plugin",
    "disabled",
    multiple=True,
    metavar="NAME",
    help="Do not load this plugin (repeatable).",
)
@output_options
def crawl(
    urls: Sequence[str],
    output: str | None,
    config_file: Path | None,
    plugins: Sequence[str],
    disabled: Sequence[str],
    verbose: int,
    quiet: bool,
    as_json: bool,
    ignore_robots: bool | None,
    **options: Any,
) -> None:
    """Crawl the site(s) at URLS into the archive folder ARCHIVE.

    Follows links and redirects within the roots' hosts, fetches page requisites,
    writes every HTTP exchange through the plugins (WARC files, full-text index), and
    ends with a report (ARCHIVE/report.json, per-URL log in ARCHIVE/crawl-log.jsonl).
    """
    setup_logging(verbose, quiet or as_json)
    resume_archive: str | None = options.pop("resume_archive")
    recrawl: bool = options.pop("recrawl")
    update: str | None = options.pop("update")
    if update and "://" in update:  # a bare --update followed by a URL
        urls, update = (update, *urls), ""
    elif update:
        if resume_archive is not None:
            raise click.UsageError("give --update ARCHIVE or --resume ARCHIVE, not both")
        resume_archive = update
    dry: bool = options.pop("dry_run")
    overrides: dict[str, Any] = {k: v for k, v in options.items() if v not in (None, ())}
    if urls:
        overrides["roots"] = tuple(urls)
    if output:
        overrides["output"] = output
    if ignore_robots:
        overrides["robots"] = False
    plugin_settings = click.get_current_context().meta.get(PLUGIN_SETTINGS)
    if plugin_settings:
        overrides["plugins"] = plugin_settings
    if resume_archive is not None:
        from .resume import resumed_config

        if urls or config_file or (output and Path(output) != Path(resume_archive)):
            raise click.UsageError("--resume ARCHIVE uses the URLs and config saved in ARCHIVE; give neither")
        config = resumed_config(Path(resume_archive), overrides)
    else:
        config = load_config(config_file, overrides)
    if plugins or disabled:
        config = config.replace(enable=(*config.enable, *plugins), disable=(*config.disable, *disabled))
    if not config.roots:
        raise click.UsageError("give at least one URL to crawl (or roots in the config file)")
    if not config.output:
        raise click.UsageError("-o ARCHIVE is missing: name the folder the crawl writes into")
    from .urls import clean_url

    for root in config.roots:
        if clean_url(root) is None:
            raise click.BadParameter(f"{root!r} is not an http(s) URL", param_hint="URLS")
    if config.robots is False and ignore_robots:
        log.warning("robots.txt is ignored for this crawl (--ignore-robots)")
    if dry:
        from .why import dry_run

        echo(dry_run(config))
        return
    from .resume import plan_run

    mode: Literal["crawl", "recrawl", "update"] = "recrawl" if recrawl else "crawl"
    if update is not None:
        from .history import interrupted_update
        from .status import NEW, archive_status

        fresh = archive_status(Path(config.output)).state == NEW
        mode = "crawl" if fresh else "update"
        recrawl = not fresh and not (config.frontier == "sqlite" and interrupted_update(Path(config.output)))
    proceed, message = plan_run(config, recrawl=recrawl)
    if mode == "update" and recrawl:
        message = f"Updating {config.output}: crawling again from its roots, fetching only what changed."
    if not proceed:
        echo(message)
        return
    if message and not quiet:
        echo(message, err=True)
    pm = make_plugin_manager(disabled=config.disable, modules=config.enable)
    show_bar = not (quiet or as_json) and sys.stderr.isatty()
    crawl_result = _run(config, pm, show_bar, mode)
    report = build_report(crawl_result)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif not quiet:
        echo(human_summary(report))
    if crawl_result.interrupted:
        signum = crawl_result.extra.get("signal", signal.SIGINT)
        if not quiet and not as_json:
            click.echo(f"Interrupted: run the same command again to resume into {config.output}.", err=True)
        sys.exit(128 + int(signum))


def _run(
    config: Any, pm: Any, show_bar: bool, mode: Literal["crawl", "recrawl", "update"] = "crawl"
) -> Crawl:
    import asyncio

    from .crawler import run_crawl

    async def main() -> Crawl:
        return await run_crawl(config, pm, install_signals=True, show_progress=show_bar, mode=mode)

    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(main())
    except* ArchiverError as group:
        raise group.exceptions[0] from None


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (`pip install archiver[speed]`), else asyncio's.

    uvloop does the loop's own work (polling, timers, socket writes) in C: the crawl
    spends less CPU per page.  ARCHIVER_LOOP=asyncio forces the standard loop (to compare,
    or to rule uvloop out when debugging); ARCHIVER_LOOP=uvloop insists on uvloop.
    """
    wanted = os.environ.get("ARCHIVER_LOOP", "auto").strip().lower() or "auto"
    if wanted not in ("auto", "asyncio", "uvloop"):
        raise click.UsageError(f"ARCHIVER_LOOP={wanted!r}: expected auto, asyncio or uvloop")
    if wanted == "asyncio":
        return None
    try:
        # Imported by name: an optional extra, absent from most type-checking environments.
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        if wanted == "uvloop":
            raise click.UsageError("ARCHIVER_LOOP=uvloop but uvloop is not installed") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def human_summary(report: dict[str, Any]) -> str:
    classes = ", ".join(f"{k} {v}" for k, v in report["by_status_class"].items()) or "none"
    lines = [
        f"Crawled {report['pages']} pages ({report['bytes'] / 1e6:.1f} MB)"
        f" in {report['wall_seconds']:.1f} s ({report['pages_per_second']:.0f} pages/s);"
        f" {report['failed']} failed, {report['redirects']} redirects.",
        f"Status: {classes}.",
    ]
    if report["errors_by_kind"]:
        lines.append("Errors: " + ", ".join(f"{k} {v}" for k, v in report["errors_by_kind"].items()) + ".")
    if report["skipped_by_reason"]:
        lines.append(
            "Skipped: " + ", ".join(f"{k} {v}" for k, v in report["skipped_by_reason"].items()) + "."
        )
    after = report.get("after_crawl")
    if after:
        caught = ", ".join(f"{name} caught up {n:,} pages" for name, n in after["caught_up"].items())
        total = report["wall_seconds"] + after["seconds"]
        lines.append(f"Then {caught} in {after['seconds']:.1f} s ({total:.1f} s in all).")
    lines.append(f"Archive: {report['archive']} (report.json, crawl-log.jsonl).")
    return "\n".join(lines)


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_plugins(as_json: bool) -> None:
    """List the plugins loaded, with their versions and the hooks each implements."""
    from .manager import FAILED_PLUGINS

    rows = plugin_versions(_startup_pm())
    if as_json:
        loaded = [{"name": n, "version": v, "hooks": h} for n, v, h in rows]
        failed = [
            {"name": name, "entry_point": value, "hooks": [], "failed": error}
            for name, (value, error) in sorted(FAILED_PLUGINS.items())
        ]
        click.echo(json.dumps(loaded + failed, indent=2))
        return
    if not rows and not FAILED_PLUGINS:
        click.echo("no plugins loaded")
    for name, version, hooks in rows:
        click.echo(f"{name} {version}".rstrip() + ": " + ", ".join(hooks))
    for name, (value, error) in sorted(FAILED_PLUGINS.items()):
        click.echo(f"{name}: FAILED to load ({value}): {error}")


_PM: Any = None
_COMMANDS_FROM: set[str] = set()
"""Plugins whose commands are on `cli` already (a process may build several managers: tests)."""


def _startup_pm(disabled: Sequence[str] = ()) -> Any:
    global _PM
    if _PM is not None:
        return _PM
    pm = make_plugin_manager(disabled=disabled)
    if not disabled:
        _PM = pm
    return pm


def disabled_before_start(argv: Sequence[str]) -> list[str]:
    """Plugins the command line switches off (--disable-plugin, or [plugins] disable in its -c
    file): the plugins add commands, so they are loaded before the command line is parsed,
    and one that is switched off must not be imported at all."""
    from .config import read_toml

    names: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith(("--disable-plugin=", "--config=")):
            arg, value = arg.split("=", 1)
        if arg == "--disable-plugin" and value:
            names.append(value)
        elif arg in ("-c", "--config") and value:
            try:
                disable = read_toml(Path(value)).get("plugins", {}).get("disable", [])
            except (ArchiverError, AttributeError):
                continue  # the command reports a bad config file itself
            names.extend(str(name) for name in disable if isinstance(disable, list))
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code instead of exiting when called from tests."""
    try:
        pm = _startup_pm(disabled_before_start(sys.argv[1:] if argv is None else argv))
    except ArchiverError as exc:
        echo(f"archiver: error: {printable(str(exc))}", err=True)
        return exc.exit_code
    Hooks(pm)  # validates specs before commands are added
    known = [plugin for name, plugin in pm.list_name_plugin() if name in _COMMANDS_FROM]
    pm.subset_hook_caller("register_commands", remove_plugins=known)(cli=cli)
    _COMMANDS_FROM.update(name for name, plugin in pm.list_name_plugin() if plugin is not None)
    try:
        code = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="archiver",
            standalone_mode=False,
        )
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ArchiverError as exc:
        echo(f"archiver: error: {printable(str(exc))}", err=True)
        return exc.exit_code
    except OSError as exc:
        if not is_read_only(exc):
            raise
        echo(f"archiver: error: {printable(read_only_message(exc))}", err=True)
        return 1
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise
        echo(f"archiver: error: a database of the archive is read-only ({exc})", err=True)
        return 1
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return 130
    return code if isinstance(code, int) else 0


def _add_core_commands() -> None:
    from .distributed import merge_command, worker_command
    from .status import status_command
    from .why import why_command

    cli.add_command(status_command)
    cli.add_command(why_command)
    cli.add_command(worker_command)
    cli.add_command(merge_command)


_add_core_commands()
