"""Bundled plugin browser: pages built by JavaScript, loaded in headless Chromium.

Optional: the ``browser`` extra (Playwright: ``pip install -e '.[browser]'`` in a clone) and
Debian's ``chromium``.
Off unless ``archiver crawl --browser`` (every HTML page) or ``[plugins.browser] match``
(the pages whose URL matches) asks for it; docs/browser.md tells the whole story.
`configure` checks the settings and that Chromium and Playwright are there, then
registers a per-run `BrowserCapture` (capture.py) whose hooks do the work.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import TYPE_CHECKING

import click
import pluggy

from archiver.api import ConfigError, add_crawl_option, hookimpl

if TYPE_CHECKING:
    from archiver.api import Config

    from .settings import BrowserSettings

CAPTURE_NAME = "browser-capture"

INSTALL_PLAYWRIGHT = "pip install 'playwright>=1.45' (the browser extra)"
INSTALL_CHROMIUM = "apt-get install chromium"


def find_chromium(settings: BrowserSettings) -> str:
    """The Chromium executable to drive, or a ConfigError saying how to install it."""
    wanted = settings.chromium or os.environ.get("CHROMIUM", "")
    if wanted:
        found = shutil.which(wanted)
        if found is None:
            given = "[plugins.browser] chromium" if settings.chromium else "the CHROMIUM variable"
            raise ConfigError(f"{given}: {wanted!r} is not an executable")
        return found
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ConfigError(f"the browser capture needs Chromium, which is not installed ({INSTALL_CHROMIUM})")
    return found


@hookimpl
def configure(config: Config, pm: pluggy.PluginManager) -> None:
    from .settings import BrowserSettings  # every command loads this plugin, only a crawl needs this

    settings = config.plugin_settings("browser", BrowserSettings)
    old = pm.get_plugin(CAPTURE_NAME)
    if old is not None:
        pm.unregister(old)
    if not settings.enabled:
        return
    if importlib.util.find_spec("playwright") is None:
        raise ConfigError(
            f"the browser capture needs Playwright, which is not installed ({INSTALL_PLAYWRIGHT})"
        )
    executable = find_chromium(settings)
    from .capture import BrowserCapture

    pm.register(BrowserCapture(settings, executable, pm), name=CAPTURE_NAME)


@hookimpl
def register_commands(cli: click.Group) -> None:
    add_crawl_option(
        cli,
        "browser",
        "all",
        "--browser",
        is_flag=True,
        default=None,
        help="Load every HTML page in headless Chromium and archive what its scripts fetch.",
    )
    add_crawl_option(
        cli,
        "browser",
        "tabs",
        "--browser-tabs",
        type=click.IntRange(1, 64),
        help="Pages loaded in Chromium at once (default 2).",
    )
