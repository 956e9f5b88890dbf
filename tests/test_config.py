"""Configuration: defaults, the TOML file, command-line precedence and one-line errors."""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from archiver.config import BOUNDS, SECTIONS, Config, load_config
from archiver.errors import ConfigError
from archiver.settings import constraint_of, parse_settings, setting

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
    with pytest.raises(ConfigError, match=r"\[crawl\] max_taks: unknown key; did you mean 'max_tasks'\?"):
        load_config(path)


def test_key_in_wrong_table(tmp_path: Path) -> None:
    path = write(tmp_path, "[crawl]\ndelay = 3\n")
    with pytest.raises(ConfigError, match=r"belongs in \[politeness\]"):
        load_config(path)


def test_unknown_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[crawll\]: unknown table; did you mean 'crawl'\?"):
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
        if name in ("plugins", "hosts") or name.startswith("_"):
            continue
        assert f"{name} =" in text, f"config.example.toml does not document {name}"
    assert config.roots
    assert '[hosts."intranet.example.org"]' in text


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


def _bundled_settings() -> dict[str, type[Any]]:
    from archiver_plugins.browser.settings import BrowserSettings
    from archiver_plugins.index.settings import IndexSettings
    from archiver_plugins.links.settings import LinksSettings
    from archiver_plugins.sitemap import SitemapSettings
    from archiver_plugins.warc.settings import WarcSettings

    return {
        "warc": WarcSettings,
        "links": LinksSettings,
        "sitemap": SitemapSettings,
        "index": IndexSettings,
        "browser": BrowserSettings,
    }


def _plugin_checks() -> list[tuple[str, type[Any], str]]:
    return [
        (name, cls, field.name)
        for name, cls in _bundled_settings().items()
        for field in dataclasses.fields(cls)
        if typing.get_type_hints(cls)[field.name] in (int, float)
    ]


@pytest.mark.parametrize(("plugin", "cls", "key"), _plugin_checks())
def test_plugin_numeric_settings_have_bounds(plugin: str, cls: type[Any], key: str) -> None:
    field = next(f for f in dataclasses.fields(cls) if f.name == key)
    low, high = constraint_of(field).low, constraint_of(field).high
    assert math.isfinite(high), f"[plugins.{plugin}] {key} has no upper bound"
    parse_settings(plugin, cls, {key: int(high) if high == int(high) else high})
    for bad in (int(high) + 1, 9223372036854775807, low - 1 if low >= 1 else -1.0):
        with pytest.raises(ConfigError) as caught:
            parse_settings(plugin, cls, {key: bad})
        assert str(caught.value).startswith(f"[plugins.{plugin}] {key}: "), str(caught.value)


def test_each_bundled_plugin_table_of_the_example_is_read_whole() -> None:
    """config.example.toml shows every setting of every bundled plugin with its default."""
    config = load_config(ROOT / "config.example.toml")
    text = (ROOT / "config.example.toml").read_text()
    for name, cls in _bundled_settings().items():
        assert config.plugin_settings(name, cls) == cls()
        table = text.split(f"[plugins.{name}]\n", 1)[1].split("\n[", 1)[0]
        for field in dataclasses.fields(cls):
            assert f"{field.name} = " in table, f"[plugins.{name}] {field.name} is not in config.example.toml"


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


def _even(value: int) -> str | None:
    return None if value % 2 == 0 else f"must be even, got {value}"


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    count: int = setting(2, low=0, high=10, check=_even)
    ratio: float = 0.5
    on: bool = True
    name: str = "x"
    folder: Path = Path(".")
    colour: Colour = Colour.RED
    mode: typing.Literal["fast", "slow"] = "fast"
    words: tuple[str, ...] = ()
    derived: int = dataclasses.field(default=0, init=False)


def test_a_table_becomes_its_frozen_dataclass() -> None:
    table = {
        "count": 4,
        "ratio": 2,
        "on": False,
        "name": "y",
        "folder": "/tmp/a",
        "colour": "green",
        "mode": "slow",
        "words": ["a", "b"],
    }
    settings = parse_settings("demo", DemoSettings, table)
    assert settings == DemoSettings(4, 2.0, False, "y", Path("/tmp/a"), Colour.GREEN, "slow", ("a", "b"))
    assert isinstance(settings.ratio, float)
    assert parse_settings("demo", DemoSettings, {"words": "one"}).words == ("one",)
    assert parse_settings("demo", DemoSettings, {}) == DemoSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.count = 6  # type: ignore[misc]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"cuont": 1}, "cuont: unknown key; did you mean 'count'?"),
        ({"zzz": 1}, "zzz: unknown key; known keys: count, ratio, on, name, folder, colour, mode, words"),
        (
            {"derived": 1},
            "derived: unknown key; known keys: count, ratio, on, name, folder, colour, mode, words",
        ),
        ({"count": "2"}, "count: expected a whole number, got '2'"),
        ({"count": True}, "count: expected a whole number, got True"),
        ({"count": 2.0}, "count: expected a whole number, got 2.0"),
        ({"count": 12}, "count: must be at most 10 (0 to 10), got 12"),
        ({"count": -2}, "count: must be at least 0 (0 to 10), got -2"),
        ({"count": 3}, "count: must be even, got 3"),
        ({"ratio": "half"}, "ratio: expected a number, got 'half'"),
        ({"ratio": math.nan}, "ratio: must be a finite number, got nan"),
        ({"on": 1}, "on: expected true or false, got 1"),
        ({"name": 3}, "name: expected a string, got 3"),
        ({"folder": 3}, "folder: expected a path, got 3"),
        ({"colour": "gren"}, "colour: expected one of 'red', 'green', got 'gren'; did you mean 'green'?"),
        ({"mode": "quick"}, "mode: expected one of 'fast', 'slow', got 'quick'"),
        ({"mode": 1}, "mode: expected one of 'fast', 'slow', got 1"),
        ({"words": ["a", 1]}, "words: expected a list of strings, got ['a', 1]"),
        ({"words": {"a": 1}}, "words: expected a list of strings, got {'a': 1}"),
    ],
)
def test_every_bad_setting_is_one_line_in_one_format(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings("demo", DemoSettings, table)
    assert str(caught.value) == f"[plugins.demo] {message}"


def test_plugin_settings_are_checked_once_per_config() -> None:
    config = Config(plugins={"demo": {"count": 4}})
    first = config.plugin_settings("demo", DemoSettings)
    assert config.plugin_settings("demo", DemoSettings) is first
    assert config.replace(plugins={"demo": {"count": 6}}).plugin_settings("demo", DemoSettings).count == 6
    assert config == Config(plugins={"demo": {"count": 4}})


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[plugins.warc]\ngzip_level = 0\n", "[plugins.warc] gzip_level: must be at least 1 (1 to 9), got 0"),
        (
            "[plugins.links]\nmax_parse_sise = 1\n",
            "[plugins.links] max_parse_sise: unknown key; did you mean",
        ),
        ("[plugins.index]\nwait = 'no'\n", "[plugins.index] wait: expected true or false, got 'no'"),
        (
            "[plugins.redis]\nlease_second = 3\n",
            "[plugins.redis] lease_second: unknown key; did you mean 'lease_seconds'?",
        ),
        (
            "[plugins.qa]\nthreshold = 3\n",
            "[plugins.qa] threshold: unknown key; the qa plugin takes no settings",
        ),
        ("[plugins.mirror]\nx = 1\n", "[plugins.mirror] x: unknown key; the mirror plugin takes no settings"),
        ("[plugins.web]\nport = 1\n", "[plugins.web] port: unknown key; the web plugin takes no settings"),
        (
            "[plugins.wacr]\ngzip_level = 1\n",
            "[plugins.wacr]: unknown table: no plugin is called 'wacr'; did you mean 'warc'?",
        ),
        ("[crawll]\n", "[crawll]: unknown table; did you mean 'crawl'?"),
        ("[limits]\nmax_byte = 3\n", "[limits] max_byte: unknown key; did you mean 'max_bytes'?"),
    ],
)
def test_a_bad_plugin_setting_is_one_line_from_the_command_line(
    tmp_path: Path, table: str, message: str
) -> None:
    config = write(tmp_path, f"[crawl]\nroots = ['http://127.0.0.1:9/']\n{table}")
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "crawl", "--config", str(config), "-o", str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": ""},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "a").exists()
