"""The core's commands: thin click wrappers around the runner, `status`, `why` and `merge`.

Every command starts through here, so a command module imports at its top only what
building the command line needs; the crawl engine (asyncio, aiohttp) is imported by the
command that runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..hookspecs import PLUGIN_SETTINGS

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


BEFORE_COMMAND = {
    "plugins": "archiver.plugins_before_command",
    "disabled": "archiver.disabled_before_command",
}
"""Where ``archiver --plugin M --disable-plugin N COMMAND`` leaves its values (the click context's
`meta`, shared by the group and its command) for the command's own options to add them."""


def remember_before_command(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    """The group's --plugin/--disable-plugin, kept for the command that follows."""
    if param.name in BEFORE_COMMAND:
        ctx.meta[BEFORE_COMMAND[param.name]] = tuple(value)


def _with_group_values(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    before: tuple[str, ...] = ctx.meta.get(BEFORE_COMMAND.get(param.name or "", ""), ())
    return (*before, *value)


def plugin_options(func: F) -> F:
    """--plugin/--disable-plugin, for the commands that crawl; the same options given before
    the command (``archiver --disable-plugin index crawl ...``) count as given to it."""
    func = click.option(
        "--disable-plugin",
        "disabled",
        multiple=True,
        metavar="NAME",
        callback=_with_group_values,
        help="Do not load this plugin (repeatable).",
    )(func)
    return click.option(
        "--plugin",
        "plugins",
        multiple=True,
        metavar="MODULE",
        callback=_with_group_values,
        help="Also load this plugin module, from the installed packages or the current folder (repeatable).",
    )(func)


def add_crawl_option(cli: click.Group, plugin: str, key: str, *decls: str, **attrs: Any) -> None:
    """Give `archiver crawl` an option (`decls`, click's `attrs`) for the setting
    ``[plugins.PLUGIN] KEY``: a value given on the command line is read as that setting over
    the file's; an option left out (or a flag left off) leaves the file's value.

    For a plugin's `register_commands`; added once, however often the hook runs.
    """
    crawl = cli.commands.get("crawl")
    if crawl is None or any(set(decls) & set(param.opts) for param in crawl.params):
        return

    def store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None and value is not False:
            ctx.meta.setdefault(PLUGIN_SETTINGS, {}).setdefault(plugin, {})[key] = value

    crawl.params.append(click.Option(list(decls), expose_value=False, callback=store, **attrs))
