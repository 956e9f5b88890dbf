"""What a first crawl and the first commands after it tell a new user."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.testing import Site

QUICK = ["--delay", "0", "--max-tries", "1", "--disable-plugin", "index", "--disable-plugin", "sitemap"]


async def run_cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def closed_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port


async def test_unreachable_root_fails_and_stays_resumable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"http://127.0.0.1:{await closed_port()}/"
    archive = tmp_path / "a"
    assert await run_cli("crawl", root, "-o", str(archive), *QUICK) == 1
    err = capsys.readouterr().err
    assert "no root URL could be fetched" in err and "unreachable" in err
    assert json.loads((archive / "report.json").read_text())["complete"] is False
    assert await run_cli("status", str(archive), "--json") == 0
    assert json.loads(capsys.readouterr().out)["state"] == "resumable"
    # running it again resumes (and fails again), it is not "a complete crawl"
    assert await run_cli("crawl", root, "-o", str(archive), *QUICK) == 1
    captured = capsys.readouterr()
    assert "complete crawl" not in captured.out + captured.err


async def test_dry_run_calls_an_unreachable_root_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"http://127.0.0.1:{await closed_port()}/"
    assert await run_cli("crawl", root, "-o", str(tmp_path / "a"), "--dry-run", *QUICK) == 1
    captured = capsys.readouterr()
    assert "verdict: unreachable" in captured.out
    assert "out of scope" not in captured.out
    said = f"archiver: error: 1 of 1 root unreachable ({root}): a crawl now would fail on it\n"
    assert captured.err == said
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["search", "{x}", "word"],
        ["serve", "{x}", "--port", "0"],
        ["status", "{x}"],
        ["warc", "ls", "{x}"],
        ["why", "{x}", "http://example.test/"],
        ["reindex", "{x}"],
        ["export", "{x}", "{out}"],
    ],
)
async def test_a_folder_that_is_no_archive_is_named_so(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notarchive"
    folder.mkdir()
    (folder / "notes.txt").write_text("not an archive")
    args = [part.format(x=folder, out=tmp_path / "out") for part in command]
    assert await asyncio.wait_for(run_cli(*args), 30) == 2  # `serve` would otherwise serve nothing
    err = capsys.readouterr().err
    assert f"{folder} is not an archive (no crawl.toml)" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


async def test_an_empty_folder_is_no_archive_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli("status", str(tmp_path)) == 2
    assert "is not an archive (no crawl.toml)" in capsys.readouterr().err


async def test_forgetting_the_output_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "something.txt").write_text("the current folder is not empty")
    monkeypatch.chdir(tmp_path)
    assert await run_cli("crawl", "http://127.0.0.1:9/", *QUICK) == 2
    err = capsys.readouterr().err
    assert "-o ARCHIVE is missing" in err and "not an archive" not in err


@pytest.mark.parametrize(
    ("key", "table"), [("roots", "crawl"), ("delay", "politeness"), ("timeout", "limits")]
)
async def test_a_top_level_key_says_which_table_it_belongs_in(
    key: str, table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    value = '["http://127.0.0.1:9/"]' if key == "roots" else "1"
    config.write_text(f"{key} = {value}\n")
    assert await run_cli("crawl", "http://127.0.0.1:9/", "-c", str(config), "-o", str(tmp_path / "a")) == 2
    err = capsys.readouterr().err
    assert f"{key} belongs in the [{table}] table" in err and "unknown table" not in err


async def test_search_and_status_take_quiet(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.page("/", "<html><title>Home</title><body><p>zebra crossing</p><a href='/b'>b</a></body></html>")
    site.page("/b", "<html><title>B</title><body><p>a zebra again</p></body></html>")
    archive = str(tmp_path / "a")
    assert await run_cli("crawl", site.url("/"), "-o", archive, "--delay", "0", "-q") == 0
    capsys.readouterr()
    assert await run_cli("search", archive, "zebra", "-q") == 0
    assert sorted(capsys.readouterr().out.split()) == [site.url("/"), site.url("/b")]
    assert await run_cli("status", "-q", archive) == 0
    assert capsys.readouterr().out == "complete\n"


async def test_the_crawl_log_names_the_plugin_that_refused_a_url(site: Site, tmp_path: Path) -> None:
    from archiver import hookimpl
    from archiver.manager import make_plugin_manager
    from archiver.runner import run_crawl
    from archiver.testing import make_config

    class NoPdf:
        @hookimpl
        def accept_url(self, url: str) -> bool | None:
            return False if url.endswith(".pdf") else None

    class Indifferent:
        @hookimpl
        def accept_url(self, url: str) -> bool | None:
            return None

    site.page("/", links=["/a.pdf", "/b"])
    site.page("/b")
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.links"])
    pm.register(NoPdf(), name="no_pdf")
    pm.register(Indifferent(), name="indifferent")
    await run_crawl(make_config(tmp_path, [site.url("/")]), pm)
    records = [
        json.loads(line) for line in (tmp_path / "archive" / "crawl-log.jsonl").read_text().splitlines()
    ]
    (refused,) = [r for r in records if r["url"] == site.url("/a.pdf")]
    assert refused["reason"] == "refused by plugin no_pdf (accept_url)"


def test_the_plugin_guide_snippet_runs_as_written(tmp_path: Path) -> None:
    guide = (Path(__file__).parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    snippet = next(block for block in guide.split("```python\n")[1:] if "def accept_url" in block)
    namespace: dict[str, object] = {"__name__": "content_types_snippet"}
    exec(compile(snippet.split("```", 1)[0], "plugins.md", "exec", dont_inherit=True), namespace)
    from archiver.config import load_config
    from archiver.errors import ConfigError
    from archiver.model import Crawl

    config = load_config(None, {"plugins": {"content_types": {"skip_extensions": [".iso"]}}})
    namespace["configure"](config)  # type: ignore[operator]
    crawl = Crawl(config=config, archive=tmp_path, roots=())
    assert namespace["accept_url"]("http://x.test/a.iso", crawl) is False  # type: ignore[operator]
    with pytest.raises(ConfigError):
        namespace["configure"](load_config(None, {"plugins": {"content_types": {"skip_extensions": 1}}}))  # type: ignore[operator]


async def test_warc_ls_prints_a_header_on_a_terminal_only(site: Site, tmp_path: Path) -> None:
    from terminal import run_on_terminal, screen_lines

    site.page("/", "<html><body>home</body></html>")
    archive = str(tmp_path / "a")
    assert await run_cli("crawl", site.url("/"), "-o", archive, *QUICK, "-q") == 0
    code, output = await asyncio.to_thread(run_on_terminal, ["warc", "ls", archive], tmp_path, 60)
    assert code == 0
    lines = screen_lines(output)
    assert lines[0].split() == ["TIMESTAMP", "ST", "TYPE", "SIZE", "URL"]
    assert lines[-1].endswith(site.url("/"))
    piped = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "warc", "ls", archive],
        capture_output=True,
        text=True,
    )
    assert "TIMESTAMP" not in piped.stdout and piped.stdout.strip().endswith(site.url("/"))


async def test_replay_without_a_timestamp_takes_the_latest_capture(site: Site, tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer
    from archiver_plugins.replay.app import make_app

    archive = tmp_path / "a"
    for word in ("first", "second"):
        site.page("/", f"<html><body>{word} version</body></html>")
        await asyncio.sleep(1.1)  # captures one second apart
        args = ["crawl", site.url("/"), "-o", str(archive), *QUICK, "-q", "--recrawl"]
        assert await run_cli(*args) == 0
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        response = await client.get(f"/replay/{site.url('/')}", allow_redirects=False)
        assert response.status == 302
        location = response.headers["Location"]
        latest = await client.get(location)
        assert latest.status == 200 and "second version" in await latest.text()
    finally:
        await client.close()
