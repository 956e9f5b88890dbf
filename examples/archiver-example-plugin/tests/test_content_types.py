"""The content_types plugin: its hooks called by hand, a real crawl of a local site, its command.

The fixtures `site` and `crawl_archive` come from archiver's pytest plugin (archiver.testing),
which pytest loads by itself wherever archiver is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import archiver_content_types as plugin
import click
import pytest
from click.testing import CliRunner

from archiver.api import Config, ConfigError, UsageError, make_plugin_manager, plugin_versions
from archiver.testing import CrawlFn, Site, make_crawl, make_page

MODULE = "archiver_content_types"


def test_it_implements_the_hooks_the_guide_lists() -> None:
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    [(name, _version, hooks)] = plugin_versions(pm)
    assert name == MODULE
    assert hooks == [
        "accept_url",
        "configure",
        "crawl_finished",
        "crawl_started",
        "page_fetched",
        "register_commands",
    ]


def test_configure_rejects_a_bad_table() -> None:
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    pm.hook.configure(config=Config(plugins={"content_types": {"skip_extensions": [".zip"]}}), pm=pm)
    with pytest.raises(ConfigError, match=r"\[plugins\.content_types\] skip: unknown key"):
        pm.hook.configure(config=Config(plugins={"content_types": {"skip": [".zip"]}}), pm=pm)
    with pytest.raises(ConfigError, match=r"\[plugins\.content_types\] skip_extensions: "):
        pm.hook.configure(config=Config(plugins={"content_types": {"skip_extensions": "zip"}}), pm=pm)


def test_hooks_called_by_hand_count_and_refuse() -> None:
    crawl = make_crawl("http://example.org/", plugins={"content_types": {"skip_extensions": [".iso"]}})
    assert plugin.accept_url(url="http://example.org/big.ISO?part=1", crawl=crawl) is False
    assert plugin.accept_url(url="http://example.org/a.html", crawl=crawl) is None
    plugin.crawl_started(crawl=crawl)
    plugin.page_fetched(page=make_page("http://example.org/", "<p>hi</p>"), links=[], crawl=crawl)
    plugin.page_fetched(
        page=make_page("http://example.org/a.css", "p{}", content_type="text/css"), links=[], crawl=crawl
    )
    assert crawl.stash[plugin.COUNTS] == {"text/html": 1, "text/css": 1}


async def test_a_crawl_counts_content_types_and_skips_extensions(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a.html", "/style.css", "/big.ISO", "/b.zip?download=1"])
    site.page("/a.html", "<p>a</p>")
    site.page("/style.css", "p{}", content_type="text/css")
    site.page("/big.ISO", b"x", content_type="application/octet-stream")
    site.page("/b.zip", b"x", content_type="application/zip")
    crawl = await crawl_archive(
        site.url("/"),
        modules=[MODULE],
        plugin_tables={"content_types": {"skip_extensions": [".iso", ".zip"]}},
    )
    assert site.hits["/big.ISO"] == 0
    assert site.hits["/b.zip"] == 0
    report = json.loads((crawl.archive / "content-types.json").read_text(encoding="utf-8"))
    assert report == {"text/html": 2, "text/css": 1}


def test_its_command_prints_the_report(tmp_path: Path) -> None:
    group = click.Group("archiver")
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    pm.hook.register_commands(cli=group)
    (tmp_path / "content-types.json").write_text('{"text/html": 3}', encoding="utf-8")
    result = CliRunner().invoke(group, ["content-types", str(tmp_path)])
    assert result.exit_code == 0
    assert result.output.split() == ["3", "text/html"]
    missing = CliRunner().invoke(group, ["content-types", str(tmp_path / "nothing")])
    assert isinstance(missing.exception, UsageError)
