"""Keys that moved from a core table to a plugin's: files written before the move still work.

`crawl_id` and `lease_seconds` were `[crawl]` keys; they are `[plugins.redis]` keys now.
Every crawl.toml saved before held them under `[crawl]` (the whole configuration was saved),
so an archive of then must still resume and update, and a user's file may still name them there.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from archiver_plugins.redis.settings import RedisSettings

from archiver.archive import dump_toml
from archiver.config import load_config
from archiver.errors import ConfigError
from archiver.layout import STATE_NAME
from archiver.status import archive_status
from archiver.testing import CrawlFn, Site

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.redis"]


def old_crawl_toml(
    root: str,
    output: str,
    *,
    frontier: str = "sqlite",
    crawl_id: str = "",
    lease_seconds: float = 30.0,
) -> str:
    """A crawl.toml as versions before the move saved it: every core key, the two under [crawl].

    Robots and the politeness delay are off so that a test crawl resumed from it is fast.
    """
    return f"""\
[crawl]
roots = [
    {json.dumps(root)},
]
output = {json.dumps(output)}
max_tasks = 10
max_redirect = 10
max_tries = 4
max_depth = 50
max_pages = 0
include = []
exclude = []
strict = true
requisites = true
user_agent = "archiver/0.1.0 (+https://pypi.org/project/archiver/)"
frontier = {json.dumps(frontier)}
crawl_id = {json.dumps(crawl_id)}
lease_seconds = {lease_seconds!r}
retry_backoff = 0.5

[limits]
timeout = 120.0
connect_timeout = 15.0
first_byte_timeout = 30.0
min_rate = 256
rate_window = 15.0
max_body_size = 67108864
max_decoded_size = 134217728
max_decompression_ratio = 1000
max_url_length = 2048
max_links_per_page = 10000
max_header_size = 65536
max_repeated_segments = 3
max_query_variants = 500
max_pages_per_host = 0

[politeness]
robots = false
per_host_concurrency = 4
delay = 0.0
retry_after_max = 300.0
adaptive_throttle = false
allow_private_redirects = false

[plugins]
enable = []
disable = []
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "crawl.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_old_crawl_toml_gives_the_plugin_its_table(tmp_path: Path) -> None:
    path = write(tmp_path, old_crawl_toml("http://h.test/", "out", crawl_id="old", lease_seconds=12.5))
    config = load_config(path)
    assert config.plugin("redis") == {"crawl_id": "old", "lease_seconds": 12.5}
    assert config.plugin_settings("redis", RedisSettings) == RedisSettings("old", 12.5)
    assert config.roots == ("http://h.test/",) and config.robots is False
    saved = config.to_toml_dict()
    assert "crawl_id" not in saved["crawl"] and "lease_seconds" not in saved["crawl"]
    assert saved["plugins"]["redis"] == {"crawl_id": "old", "lease_seconds": 12.5}
    # Saved again in the new layout, it reads back the same.
    assert load_config(write(tmp_path, dump_toml(saved))) == config


def test_a_moved_key_in_a_new_file_is_honoured_and_the_command_line_wins(tmp_path: Path) -> None:
    path = write(tmp_path, '[crawl]\nmax_tasks = 3\ncrawl_id = "mine"\n')
    assert load_config(path).plugin("redis") == {"crawl_id": "mine"}
    config = load_config(path, {"plugins": {"redis": {"crawl_id": "cli"}}})
    assert config.plugin_settings("redis", RedisSettings).crawl_id == "cli"
    assert config.max_tasks == 3


def test_a_moved_key_is_checked_by_the_plugin(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[crawl]\nlease_seconds = 0\n"))
    with pytest.raises(
        ConfigError, match=r"^\[plugins.redis\] lease_seconds: must be at least 1 \(1 to 86400\)"
    ):
        config.plugin_settings("redis", RedisSettings)


def test_one_key_in_both_places(tmp_path: Path) -> None:
    same = '[crawl]\ncrawl_id = "a"\n[plugins.redis]\ncrawl_id = "a"\nlease_seconds = 5\n'
    assert load_config(write(tmp_path, same)).plugin("redis") == {"crawl_id": "a", "lease_seconds": 5}
    path = write(tmp_path, '[crawl]\ncrawl_id = "a"\n[plugins.redis]\ncrawl_id = "b"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: crawl.crawl_id = 'a' and [plugins.redis] crawl_id = 'b': keep only [plugins.redis] crawl_id"
    )


def test_a_moved_key_elsewhere_names_its_table(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"\[politeness\] crawl_id: unknown key; it belongs in \[plugins.redis\]"
    ):
        load_config(write(tmp_path, '[politeness]\ncrawl_id = "a"\n'))
    with pytest.raises(ConfigError, match=r"lease_seconds belongs in the \[plugins.redis\] table"):
        load_config(write(tmp_path, "lease_seconds = 3\n"))


def test_a_moved_key_as_an_override() -> None:
    """Scripts that called `load_config(None, {"crawl_id": ...})` keep working."""
    config = load_config(None, {"crawl_id": "x", "lease_seconds": 4})
    assert config.plugin_settings("redis", RedisSettings) == RedisSettings("x", 4.0)


async def run_cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", *args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


def take_back(state: Path, url: str) -> None:
    """Leave `url` in flight in the SQLite state, as a crawl killed while fetching it does."""
    db = sqlite3.connect(state)
    with db:
        assert db.execute("UPDATE urls SET state = 1, taken_at = 0 WHERE key = ?", (url,)).rowcount == 1
        for number, name in enumerate(("queued", "in_flight", "done", "failed")):
            db.execute(
                "UPDATE meta SET value = (SELECT count(*) FROM urls WHERE state = ?) WHERE name = ?",
                (number, f"count_{name}"),
            )
    db.close()


@pytest.mark.timeout(120)
async def test_an_archive_saved_before_the_move_resumes_and_updates(
    site: Site, crawl_archive: CrawlFn
) -> None:
    site.page("/", links=["/a"])
    site.page("/a")
    crawl = await crawl_archive(site.url("/"), plugins=("links",), frontier="sqlite")
    archive = crawl.archive
    take_back(archive / STATE_NAME, site.url("/a"))
    (archive / "crawl.toml").write_text(
        old_crawl_toml(site.url("/"), str(archive), lease_seconds=45.0), encoding="utf-8"
    )
    assert archive_status(archive).state == "resumable"

    code, out = await run_cli("crawl", "--resume", str(archive), *PLUGINS, "-q")
    assert code == 0, out
    assert archive_status(archive).state == "complete"
    assert site.hits["/a"] == 2 and site.hits["/"] == 1
    saved = tomllib.loads((archive / "crawl.toml").read_text(encoding="utf-8"))
    assert "crawl_id" not in saved["crawl"] and "lease_seconds" not in saved["crawl"]
    assert saved["plugins"]["redis"] == {"crawl_id": "", "lease_seconds": 45.0}

    (archive / "crawl.toml").write_text(old_crawl_toml(site.url("/"), str(archive)), encoding="utf-8")
    code, out = await run_cli("crawl", "--update", str(archive), *PLUGINS, "-q")
    assert code == 0, out
    assert site.hits["/"] == 2 and archive_status(archive).state == "complete"
