"""The command line end to end: exit codes, one-line errors, --json, plugins, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.testing import Site

FAST = ["--delay", "0", "--ignore-robots", "--frontier", "memory", "--max-tries", "1"]


async def run_cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def test_crawl_prints_summary(site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site.page("/", links=["/a", "/gone"])
    site.page("/a")
    code = await run_cli(
        "crawl",
        site.url("/"),
        "-o",
        str(tmp_path / "a"),
        *FAST,
        "--disable-plugin",
        "index",
        "--disable-plugin",
        "sitemap",
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Crawled 3 pages" in out
    assert "Status: 2xx 2, 4xx 1." in out


async def test_one_of_a_kind_is_singular(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "1 page", "1 WARC file": never "1 pages"."""
    site.page("/", "<title>Alone</title><p>a single page</p>")
    archive = tmp_path / "a"
    crawl = ["crawl", site.url("/"), "-o", str(archive), *FAST, "--disable-plugin", "sitemap"]
    assert await run_cli(*crawl) == 0
    out = capsys.readouterr().out
    assert "Crawled 1 page (" in out and "0 failed, 0 redirects." in out
    assert await run_cli("reindex", str(archive)) == 0
    out = capsys.readouterr().out
    assert f"indexed 1 page from 1 WARC file into {archive}" in out


async def test_crawl_json(site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site.page("/")
    code = await run_cli(
        "crawl",
        site.url("/"),
        "-o",
        str(tmp_path / "a"),
        *FAST,
        "--json",
        "--plugin",
        "archiver_plugins.links",
        "--disable-plugin",
        "sitemap",
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["pages"] == 1
    assert report["complete"] is True


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["crawl", "ftp://example.org/", "-o", "X"], 2, "is not an http(s) URL"),
        (
            ["crawl", "example.org", "-o", "X"],
            2,
            "'example.org' is not an http(s) URL; did you mean https://example.org/?",
        ),
        (["crawl", "example.org/docs?a=1", "-o", "X"], 2, "did you mean https://example.org/docs?a=1?"),
        # a local server, reached over http as curl and wget do
        (["crawl", "localhost:8000", "-o", "X"], 2, "did you mean http://localhost:8000/?"),
        (["crawl", "127.0.0.1:8000/docs", "-o", "X"], 2, "did you mean http://127.0.0.1:8000/docs?"),
        (["crawl", "-o", "X"], 2, "give at least one URL"),
        (["crawl", "http://127.0.0.1:9/", "-o", "X", "--max-tasks", "0"], 2, "max_tasks: must be at least 1"),
        (
            ["crawl", "http://127.0.0.1:9/", "-o", "X", "--disable-plugin", "nope"],
            2,
            "cannot disable plugin 'nope'",
        ),
        (["crawl", "http://127.0.0.1:9/", "-o", "X", "--plugin", "no.such.module"], 2, "cannot load plugin"),
        (["crawl", "http://127.0.0.1:9/", "-o", "X", "--config", "missing.toml"], 2, "config file not found"),
        (["nosuchcommand"], 2, "No such command"),
    ],
)
async def test_user_errors_are_one_line(
    args: list[str], code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chdir(tmp_path)
    assert await run_cli(*args) == code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


async def test_output_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code = await run_cli("crawl", "http://127.0.0.1:9/", "-o", str(target), *FAST)
    err = capsys.readouterr().err
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("archiver: error: ")]
    assert len(errors) == 1 and "is not a folder" in errors[0]
    assert "Traceback" not in err


async def test_unreachable_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = await run_cli("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "a"), *FAST)
    err = capsys.readouterr().err
    assert code == 1
    assert "no root URL could be fetched" in err
    assert "Traceback" not in err


async def test_plugins_command_lists_bundled_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    assert await run_cli("plugins", "--json") == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert "extract_links" in rows["links"]["hooks"]
    assert {"links", "warc", "index"} <= set(rows)
    assert rows["links"]["version"]


async def test_help_explains_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert await run_cli("crawl", "--help") == 0
    out = capsys.readouterr().out
    for option in (
        "--output",
        "--max-tasks",
        "--max-redirect",
        "--max-tries",
        "--max-depth",
        "--max-pages",
        "--include",
        "--exclude",
        "--strict / --lenient",
        "--user-agent",
        "--timeout",
        "--quiet",
        "--verbose",
        "--json",
        "--config",
    ):
        assert option in out


async def test_sigint_stops_cleanly_with_130(site: Site, tmp_path: Path) -> None:
    site.fan(200, delay=0.2, body="<a href='/'>home</a>")
    archive = tmp_path / "a"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        site.url("/"),
        "-o",
        str(archive),
        *FAST,
        "--max-tasks",
        "2",
        "--disable-plugin",
        "index",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    for _ in range(100):
        await asyncio.sleep(0.1)
        if site.hits.total() > 3:
            break
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err.decode()
    assert b"Interrupted" in err
    report = json.loads((archive / "report.json").read_text())
    assert report["interrupted"] is True
    assert report["complete"] is False


async def test_plugin_options_before_the_command_count(site: Site, tmp_path: Path) -> None:
    site.page("/")
    archive = tmp_path / "a"
    before = ("--disable-plugin", "index", "--disable-plugin", "sitemap")
    assert await run_cli(*before, "crawl", site.url("/"), "-o", str(archive), *FAST) == 0
    assert (archive / "warc").is_dir()
    assert not (archive / "index").exists()
    assert site.hits["/sitemap.xml"] == 0


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--plugin", "hello_plugin.py", "plugins"],
            {},
            "archiver: error: cannot load plugin 'hello_plugin.py': --plugin takes a module's name, not"
            " its file: --plugin hello_plugin (run from the folder that holds hello_plugin.py)",
        ),
        (
            ["crawl", "http://127.0.0.1:9/", "-o", "a", "--auth", "127.0.0.1:9"],
            {"NETRC": "{tmp}/team-netrc"},
            "archiver: error: no credentials for 127.0.0.1:9: add `machine 127.0.0.1:9 login NAME"
            " password SECRET` to {tmp}/team-netrc or set ARCHIVER_LOGIN and ARCHIVER_PASSWORD",
        ),
        (
            ["crawl", "http://127.0.0.1:9/", "-o", "a", "--browser"],
            {"CHROMIUM": "no-such-chromium"},
            "archiver: error: the CHROMIUM variable: 'no-such-chromium' is not an executable",
        ),
    ],
    ids=["plugin-file", "netrc", "chromium"],
)
def test_hints_name_what_the_user_gave(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    (tmp_path / "hello_plugin.py").write_text("")
    given = {name: value.format(tmp=tmp_path) for name, value in env.items()}
    environment = {k: v for k, v in os.environ.items() if k not in ("ARCHIVER_LOGIN", "ARCHIVER_PASSWORD")}
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        cwd=tmp_path,
        env={**environment, **given},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == message.format(tmp=tmp_path) + "\n"
