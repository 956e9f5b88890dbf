"""The core's commands: thin click wrappers around the runner, `status`, `why` and `merge`.

Every command starts through here, so a command module imports at its top only what
building the command line needs; the crawl engine (asyncio, aiohttp) is imported by the
command that runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def json_option(help: str = "Print a machine-readable JSON result.") -> Callable[[F], F]:
    """--json (the `as_json` argument), for every command that can print its result for a program."""
    option: Callable[[F], F] = click.option("--json", "as_json", is_flag=True, help=help)
    return option


def output_options(func: F) -> F:
    """-v/-q/--json, shared by the commands that crawl."""
    func = click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")(func)
    func = click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr; no progress bar.")(func)
    return json_option()(func)


def plugin_options(func: F) -> F:
    """--plugin/--disable-plugin, for the commands that crawl."""
    func = click.option(
        "--disable-plugin",
        "disabled",
        multiple=True,
        metavar="NAME",
        help="Do not load this plugin (repeatable).",
    )(func)
    return click.option(
        "--plugin",
        "plugins",
        multiple=True,
        metavar="MODULE",
        help="Also load this plugin module, from the installed packages or the current folder (repeatable).",
    )(func)
