"""`archiver plugins`: what is loaded, in which version, implementing which hooks."""

from __future__ import annotations

import json

import click
import pluggy

from ..manager import FAILED_PLUGINS, make_plugin_manager, plugin_versions
from . import json_option


@click.command("plugins")
@json_option()
@click.pass_obj
def plugins_command(pm: pluggy.PluginManager | None, as_json: bool) -> None:
    """List the plugins loaded, with their versions and the hooks each implements."""
    rows = plugin_versions(pm or make_plugin_manager())
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
