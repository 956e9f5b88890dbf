"""Control characters from archived titles and URLs never reach the terminal raw.

Each command runs in a child process with its output on a pipe (as a terminal would get
it, minus click's own styling, which is dropped on a pipe): no ESC byte may come out,
and the escaped form must.  JSON output keeps the exact strings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_archive import run_archiver, write_warc

from archiver.archive import dump_toml
from archiver.config import Config
from archiver.terminal import printable

HOST = "http://h.test"
TITLE = "\x1b]0;pwned\x07\x1b[2J\x9b31mtitle\u202e"
URL = f"{HOST}/\x1b[2Jpage"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    archive = tmp_path / "arch\x1b[2Jive"
    html = f"<title>{TITLE}</title><p>zebra</p>".encode()
    pages = [
        (f"{HOST}/", html, [("Content-Type", "text/html")]),
        (URL, b"zebra", [("Content-Type", "text/html"), ("Content-Encoding", "x-unknown")]),
    ]
    write_warc(archive / "warc" / "a.warc.gz", pages)
    (archive / "crawl.toml").write_text(dump_toml(Config(roots=(f"{HOST}/",)).to_toml_dict()))
    return archive


def test_printable() -> None:
    assert printable("a\x1b[2Jb\x07\x9b\u202e\n") == "a\\x1b[2Jb\\x07\\x9b\\u202e\\x0a"
    assert printable("line\nnext\ttab", keep_newlines=True) == "line\nnext\\x09tab"
    assert printable("café 東京 ✓") == "café 東京 ✓"


@pytest.mark.parametrize("command", ["search", "warc ls", "export", "why", "status"])
def test_no_raw_escape_reaches_the_terminal(archive: Path, tmp_path: Path, command: str) -> None:
    if command == "search":
        assert run_archiver("reindex", archive, cwd=tmp_path).code == 0
    args: list[str | Path] = {
        "search": ["search", archive, "zebra"],
        "warc ls": ["warc", "ls", archive],
        "export": ["export", archive, tmp_path / "out"],
        "why": ["why", archive, URL],
        "status": ["status", archive],
    }[command]
    ran = run_archiver(*args, cwd=tmp_path)
    shown = ran.out + ran.err
    assert "Traceback" not in shown, shown
    assert "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown, repr(shown)
    expected = {
        "search": "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31mtitle\\u202e",
        "warc ls": f"{HOST}/\\x1b[2Jpage",
        "export": f"{HOST}/\\x1b[2Jpage",
        "why": f"{HOST}/\\x1b[2Jpage",
        "status": "arch\\x1b[2Jive",
    }[command]
    assert expected in shown, shown


def test_json_output_stays_exact(archive: Path, tmp_path: Path) -> None:
    ran = run_archiver("warc", "ls", "--json", archive, cwd=tmp_path)
    urls = {json.loads(line)["url"] for line in ran.out.splitlines()}
    assert URL in urls
    assert run_archiver("reindex", archive, cwd=tmp_path).code == 0
    ran = run_archiver("search", "--json", archive, "zebra", cwd=tmp_path)
    titles = {hit["title"] for hit in json.loads(ran.out)["hits"]}
    assert TITLE in titles or TITLE.strip() in titles
