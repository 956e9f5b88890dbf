"""Configuration: defaults, the TOML file, command-line precedence and one-line errors."""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archiver.config import BOUNDS, SECTIONS, Config, load_config
from archiver.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "crawl.toml"
    path.write_text(text)
    return path


def test_defaults() -> None:
    config = load_config()
    assert config == Config()
    assert config.max_tasks == 10 and config.strict is True and config.robots is True
    assert config.user_agent.startswith("archiver/")


def test_file_then_command_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[crawl]\nmax_tasks = 3\nexclude = ["/x"]\n[politeness]\ndelay = 1.5\n')
    config = load_config(path, {"max_tasks": 7, "delay": None})
    assert config.max_tasks == 7
    assert config.delay == 1.5
    assert config.exclude == ("/x",)


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    path = write(tmp_path, "[crawl]\nmax_taks = 3\n")
    with pytest.raises(ConfigError, match=r"unknown key crawl.max_taks \(did you mean 'max_tasks'\?\)"):
        load_config(path)


def test_key_in_wrong_table(tmp_path: Path) -> None:
    path = write(tmp_path, "[crawl]\ndelay = 3\n")
    with pytest.raises(ConfigError, match=r"belongs in \[politeness\]"):
        load_config(path)


def test_unknown_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown table \[crawll\] \(did you mean 'crawl'\?\)"):
        load_config(write(tmp_path, "[crawll]\n"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[crawl]\nmax_tasks = 'ten'\n", "max_tasks: expected a whole number"),
        ("[crawl]\nmax_tasks = 0\n", "max_tasks: must be at least 1"),
        ("[politeness]\nper_host_concurrency = 0\n", "per_host_concurrency: must be at least 1"),
        ("[limits]\ntimeout = -1\n", "timeout: must be at least 0"),
        ("[crawl]\nstrict = 'yes'\n", "strict: expected true or false"),
        ("[crawl]\nexclude = ['(']\n", "exclude: invalid regular expression"),
        ("[crawl]\nfrontier = 'postgres'\n", "frontier: expected"),
        ("[crawl\n", "invalid TOML"),
    ],
)
def test_bad_values(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


def test_plugin_tables_are_kept_for_plugins(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[plugins]\ndisable = ['index']\n[plugins.warc]\nprefix = 'x'\n"))
    assert config.disable == ("index",)
    assert config.plugin("warc") == {"prefix": "x"}
    assert config.plugin("nothing") == {}


def test_example_config_loads_and_documents_every_key() -> None:
    example = ROOT / "config.example.toml"
    config = load_config(example)
    text = example.read_text()
    for name in Config.__dataclass_fields__:
        if name in ("plugins",):
            continue
        assert f"{name} =" in text, f"config.example.toml does not document {name}"
    assert config.roots


def test_example_plugin_tables_are_accepted_by_their_plugins() -> None:
    from archiver.manager import Hooks, make_plugin_manager

    config = load_config(ROOT / "config.example.toml")
    assert {"warc", "links", "sitemap", "index"} <= set(config.plugins)
    names = [f"archiver_plugins.{name}" for name in config.plugins]
    Hooks(make_plugin_manager(autoload=False, modules=names)).configure(config)


NUMERIC = [
    name
    for section in ("crawl", "limits", "politeness")
    for name in SECTIONS[section]
    if typing.get_type_hints(Config)[name] in (int, float)
]


def test_every_numeric_option_has_bounds() -> None:
    assert sorted(NUMERIC) == sorted(BOUNDS)


@pytest.mark.parametrize("name", NUMERIC)
def test_numeric_option_bounds(tmp_path: Path, name: str) -> None:
    """Each numeric option takes its bounds, refuses past them and refuses nan and inf, naming the range."""
    low, high = BOUNDS[name]
    kind = typing.get_type_hints(Config)[name]
    section = next(s for s, names in SECTIONS.items() if name in names)
    assert load_config(None, {name: kind(high)}).__getattribute__(name) == high
    if math.isfinite(low):
        assert load_config(None, {name: kind(low)}).__getattribute__(name) == low
    too_big = "9223372036854775807" if kind is int else "1e300"
    bad = [too_big, *(["nan", "inf", "-inf"] if kind is float else [])]
    if math.isfinite(low):
        bad.append(str(kind(low) - 1))
    for text in bad:
        path = tmp_path / "c.toml"
        path.write_text(f"[{section}]\n{name} = {text}\n")
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        message = str(caught.value)
        assert message.startswith(f"{name}: must be "), message
        assert f"{high:g}" in message or str(int(high)) in message, message


def _plugin_checks() -> list[tuple[str, str, float, float, Callable[[dict[str, Any]], object]]]:
    from archiver_plugins import links, sitemap
    from archiver_plugins.index import _KEYS, parse_options
    from archiver_plugins.warc.settings import BOUNDS as WARC_BOUNDS
    from archiver_plugins.warc.settings import parse_settings

    def through_config(name: str, read: Callable[[Config], object]) -> Callable[[dict[str, Any]], object]:
        return lambda table: read(Config(plugins={name: table}))

    checks = [("warc", key, low, high, parse_settings) for key, (low, high) in WARC_BOUNDS.items()]
    checks += [
        ("index", key, low, high, parse_options)
        for key, (kind, low, high) in _KEYS.items()
        if kind is not bool
    ]
    checks.append(("links", "max_parse_size", 1, 1 << 32, through_config("links", links._settings)))
    checks.append(("sitemap", "max_size", 1, 1 << 32, through_config("sitemap", sitemap._settings)))
    return checks


@pytest.mark.parametrize(("plugin", "key", "low", "high", "parse"), _plugin_checks())
def test_plugin_numeric_settings_have_bounds(
    plugin: str, key: str, low: float, high: float, parse: Callable[[dict[str, Any]], object]
) -> None:
    parse({key: int(high) if high == int(high) else high})
    for bad in (int(high) + 1, 9223372036854775807, low - 1 if low >= 1 else -1.0):
        with pytest.raises(ConfigError) as caught:
            parse({key: bad})
        assert str(caught.value).startswith(f"plugins.{plugin}.{key}: "), str(caught.value)
