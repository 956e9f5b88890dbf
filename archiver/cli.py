"""The `archiver` command line: the group, the plugins' commands, and errors made one line.

The core's commands are in `archiver.commands`; plugins add theirs (`register_commands`).
User mistakes (`ArchiverError`) become one line on stderr and an exit code; Ctrl-C
becomes 130 (SIGTERM 143) after the crawl has flushed what it had.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from . import __version__
from .commands import remember_before_command
from .commands.control import control_command
from .commands.crawl import crawl_command
from .commands.merge import merge_command
from .commands.plugins import plugins_command
from .commands.status import status_command
from .commands.why import why_command
from .errors import ArchiverError, BadLines, is_read_only, read_only_message
from .manager import Hooks, make_plugin_manager
from .terminal import echo, printable


class _Commands(click.Group):
    """The command group: a command whose reader went away exits as `_reader_gone` says (click
    would exit 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            return _reader_gone()


@click.group(
    cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="archiver")
# Read by `plugins_before_start` before click parses anything; declared here so that any command
# (a plugin's own included) can follow them: `archiver --plugin MODULE COMMAND`.
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    expose_value=False,
    callback=remember_before_command,
    help="Also load this plugin module, from the installed packages or the current folder (repeatable).",
)
@click.option(
    "--disable-plugin",
    "disabled",
    multiple=True,
    metavar="NAME",
    expose_value=False,
    callback=remember_before_command,
    help="Do not load this plugin (repeatable).",
)
def cli() -> None:
    """Archive whole websites to WARC, browse them offline and search them.

    Start with `archiver crawl URL -o ARCHIVE`, then `archiver search ARCHIVE QUERY`.
    Run `archiver COMMAND --help` for each command's options.
    """


for _command in (crawl_command, status_command, control_command, why_command, merge_command, plugins_command):
    cli.add_command(_command)


_PM: Any = None
_COMMANDS_FROM: set[str] = set()
"""Plugins whose commands are on `cli` already (a process may build several managers: tests)."""


def _startup_pm(disabled: Sequence[str] = (), modules: Sequence[str] = ()) -> Any:
    global _PM
    if _PM is not None:
        return _PM
    pm = make_plugin_manager(disabled=disabled, modules=modules)
    if not disabled and not modules:
        _PM = pm
    return pm


def plugins_before_start(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Plugins the command line switches off (--disable-plugin, or [plugins] disable in its -c
    file) and on (--plugin MODULE): the plugins add commands, so they are loaded before the
    command line is parsed, and one that is switched off must not be imported at all."""
    names: list[str] = []
    modules: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith(("--disable-plugin=", "--config=", "--plugin=")):
            arg, value = arg.split("=", 1)
        if arg == "--disable-plugin" and value:
            names.append(value)
        elif arg == "--plugin" and value:
            modules.append(value)
        elif arg in ("-c", "--config") and value:
            from .config import read_toml

            try:
                disable = read_toml(Path(value)).get("plugins", {}).get("disable", [])
            except (ArchiverError, AttributeError):
                continue  # the command reports a bad config file itself
            names.extend(str(name) for name in disable if isinstance(disable, list))
    return names, modules


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code instead of exiting when called from tests."""
    try:
        pm = _startup_pm(*plugins_before_start(sys.argv[1:] if argv is None else argv))
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
            obj=pm,
        )
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ArchiverError as exc:
        for message in exc.lines if isinstance(exc, BadLines) else (str(exc),):
            echo(f"archiver: error: {printable(message)}", err=True)
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


def _reader_gone() -> int:
    """Exit 0, quietly, once the reader of standard output has gone (`archiver search A q | head -1`):
    what it did not read it did not want, and `set -o pipefail` scripts go on.

    Standard output is pointed at /dev/null so that the interpreter's last flush of what is
    still buffered cannot fail again on the way out.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # no file descriptor behind sys.stdout (a test's capture)
    finally:
        os.close(devnull)
    return 0
