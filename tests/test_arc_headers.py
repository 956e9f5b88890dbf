"""ARC header lines as public test suites write them, read as warcio reads them.

Two shapes seen there: a `filedesc://` line whose IP, date and media type are dashes (jwat's
``test-arc-1.0-dashed-fields.arc``), and a URL holding spaces (pywb's
``example-space-in-url.arc``; warcio takes the last four fields from the right).  The files
here are written by the test with those shapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver.cli import main

pytestmark = pytest.mark.timeout(60)

VERSION = b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"


def record(header: str, block: bytes, separator: bytes = b"\n") -> bytes:
    return header.encode() + b"\n" + block + separator


def page(title: str, word: str) -> bytes:
    body = f"<html><head><title>{title}</title></head><body>{word}</body></html>".encode()
    return b"HTTP/1.0 200 OK\nContent-type: text/html\n\n" + body


def dashed_fields(path: Path) -> None:
    team = page("Stream team", "kingfisher survey")
    path.write_bytes(
        record(f"filedesc:// - - - {len(VERSION)}", VERSION)
        + record(f"http://old.test:80/team.htm 10.0.0.1 19970417175710 html {len(team)}", team)
    )


def space_in_url(path: Path) -> None:
    email = page("Mail this page", "heron")
    plain = page("Plain", "plover")
    path.write_bytes(
        record(f"filedesc://{path.name} 0.0.0.0 20040925000741 text/plain {len(VERSION)}", VERSION)
        + record(
            f"http://old.test/index.cfm?Title=Martinez Targets Castor&x=1 10.0.0.2 20040925001013 text/html"
            f" {len(email)}",
            email,
            b"",  # no newline between the records, as in the suite's file
        )
        + record(f"http://old.test/plain 10.0.0.3 20040925001014 text/html {len(plain)}", plain)
    )


def search_urls(archive: Path, word: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["search", str(archive), word, "--json"]) == 0
    return [hit["url"] for hit in json.loads(capsys.readouterr().out)["hits"]]


def test_arc_files_of_public_suites_are_imported_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dashed, spaced = tmp_path / "dashed-fields.arc", tmp_path / "space-in-url.arc"
    dashed_fields(dashed)
    space_in_url(spaced)
    archive = tmp_path / "archive"
    code = main(["reindex", "--warc", str(dashed), str(spaced), "-o", str(archive), "--processes", "1"])
    assert code == 0, capsys.readouterr().err
    assert search_urls(archive, "kingfisher", capsys) == ["http://old.test:80/team.htm"]
    assert search_urls(archive, "heron", capsys) == [
        "http://old.test/index.cfm?Title=Martinez%20Targets%20Castor&x=1"
    ]
    assert search_urls(archive, "plover", capsys) == ["http://old.test/plain"]
    capsys.readouterr()
    assert main(["warc", "check", str(archive / "warc" / dashed.name), "-q"]) == 0, capsys.readouterr()
    assert main(["warc", "check", str(archive / "warc" / spaced.name), "-q"]) == 1  # strict about the letter:
    assert "does not end where the ARC header says (no newline after it)" in capsys.readouterr().out
