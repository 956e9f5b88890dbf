"""The example plugin of docs/plugins.md works as the guide says: loaded by name, it runs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner
from conftest import Site, make_config

from archiver import ConfigError, UsageError
from archiver.config import Config
from archiver.manager import make_plugin_manager, plugin_versions
from archiver.runner import run_crawl

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "archiver-example-plugin"
MODULE = "archiver_content_types"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The example plugin's module, importable as if it were installed."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    module = pm.get_plugin(MODULE)
    assert isinstance(module, ModuleType)
    return module


def test_its_entry_point_names_the_module() -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["archiver"] == {"content_types": MODULE}
    assert (EXAMPLE / f"{MODULE}.py").is_file()


def test_it_implements_the_hooks_the_guide_lists(example: ModuleType) -> None:
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


def test_configure_rejects_a_bad_table(example: ModuleType) -> None:
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    pm.hook.configure(config=Config(plugins={"content_types": {"skip_extensions": [".zip"]}}), pm=pm)
    with pytest.raises(ConfigError, match=r"\[plugins\.content_types\] skip: unknown key"):
        pm.hook.configure(config=Config(plugins={"content_types": {"skip": [".zip"]}}), pm=pm)
    with pytest.raises(ConfigError, match=r"\[plugins\.content_types\] skip_extensions: "):
        pm.hook.configure(config=Config(plugins={"content_types": {"skip_extensions": "zip"}}), pm=pm)


async def test_a_crawl_counts_content_types_and_skips_extensions(
    example: ModuleType, site: Site, tmp_path: Path
) -> None:
    site.page("/", links=["/a.html", "/style.css", "/big.ISO", "/b.zip?download=1"])
    site.page("/a.html", "<p>a</p>")
    site.page("/style.css", "p{}", content_type="text/css")
    site.page("/big.ISO", b"x", content_type="application/octet-stream")
    site.page("/b.zip", b"x", content_type="application/zip")
    config = make_config(
        tmp_path, [site.url("/")], plugins={"content_types": {"skip_extensions": [".iso", ".zip"]}}
    )
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links", MODULE])
    crawl = await run_crawl(config, pm)
    assert site.hits["/big.ISO"] == 0
    assert site.hits["/b.zip"] == 0
    report = json.loads((crawl.archive / "content-types.json").read_text(encoding="utf-8"))
    assert report == {"text/html": 2, "text/css": 1}


def test_its_command_prints_the_report(example: ModuleType, tmp_path: Path) -> None:
    group = click.Group("archiver")
    pm = make_plugin_manager(autoload=False, modules=[MODULE])
    pm.hook.register_commands(cli=group)
    (tmp_path / "content-types.json").write_text('{"text/html": 3}', encoding="utf-8")
    result = CliRunner().invoke(group, ["content-types", str(tmp_path)])
    assert result.exit_code == 0
    assert result.output.split() == ["3", "text/html"]
    missing = CliRunner().invoke(group, ["content-types", str(tmp_path / "nothing")])
    assert isinstance(missing.exception, UsageError)
