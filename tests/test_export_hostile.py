"""Hostile URLs in a WARC (from any tool) never make the export write outside DIR.

The WARC is written with warcio, the reference library, so the URLs reach the export
exactly as listed (a crawler would have normalized some of them away).  DIR also holds
symbolic links pointing outside it before the export starts.
"""

from __future__ import annotations

import io
import json
import os
import unicodedata
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from archiver_plugins.mirror.export import ExportOptions, export_mirror
from archiver_plugins.mirror.sinks import MANIFEST_NAME
from selectolax.lexbor import LexborHTMLParser
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HOST = "http://h.test"
HOSTILE = [
    f"{HOST}/",
    f"{HOST}/../../outside1.html",
    f"{HOST}/a/../../../outside2",
    f"{HOST}/%2e%2e/%2e%2e/outside3",
    f"{HOST}/%2e%2e%2f%2e%2e%2foutside4",
    f"{HOST}/..%2F..%2Foutside5",
    f"{HOST}/%2F..%2F..%2Fetc%2Fpasswd",
    f"{HOST}/..\\..\\outside6",
    f"{HOST}/a%5C..%5C..%5Coutside7",
    f"{HOST}/%C0%AE%C0%AE/%C0%AE%C0%AE/overlong-dots",
    f"{HOST}//etc/passwd",
    f"{HOST}/%00nul",
    f"{HOST}/x%00.html",
    f"{HOST}/CON",
    f"{HOST}/con.txt",
    f"{HOST}/aux/nul",
    f"{HOST}/COM1.html",
    f"{HOST}/LPT9",
    f"{HOST}/trailing.",
    f"{HOST}/trailing%20",
    f"{HOST}/a:b",
    f"{HOST}/q?x=a/b\\c:d*e|f<g>h%22i",
    f"{HOST}/" + "long" * 100,
    f"{HOST}/" + "%C3%A9" * 200,
    f"{HOST}/Case",
    f"{HOST}/case",
    f"{HOST}/CASE",
    f"{HOST}/caf%C3%A9",
    f"{HOST}/cafe%CC%81",  # the same name in NFD: one file on macOS
    f"{HOST}/a",
    f"{HOST}/a/b",
    f"{HOST}/a?x=1",
    f"{HOST}/.",
    f"{HOST}/.hidden",
    f"{HOST}/%E2%80%AE/bidi-override",
    f"{HOST}/tab%09name",
    f"{HOST}/sym/inside.html",
    f"{HOST}/link.html",
    "http://h.test:8080/port",
    "http://index.html/",
    "http://export-report.json/x",
    "http://[::1]:8080/v6",
]
FORBIDDEN = set('<>:"\\|?*') | {chr(c) for c in range(32)}
DEVICES = {"con", "prn", "aux", "nul"} | {f"{p}{n}" for p in ("com", "lpt") for n in "0123456789"}


def write_warc(path: Path, urls: list[str]) -> None:
    path.parent.mkdir(parents=True)
    links = "".join(f'<a href="{url}">x</a>\n' for url in urls)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url in urls:
            body = f"<!doctype html><title>{len(url)}</title>{links}".encode()
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
            )
            writer.write_record(record)


def snapshot(root: Path, skip: Path) -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(root):
        if Path(folder) == skip:
            dirs.clear()
            continue
        found.update(os.path.join(folder, name) for name in dirs + files)
    return found


def test_hostile_urls_stay_inside_dir(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    write_warc(archive / "warc" / "hostile.warc.gz", HOSTILE)
    out = tmp_path / "work" / "out"
    outside = tmp_path / "work" / "outside"
    outside.mkdir(parents=True)
    victim = tmp_path / "work" / "victim.txt"
    victim.write_text("keep me")
    (out / "h.test").mkdir(parents=True)
    (out / "h.test" / "sym").symlink_to(outside, target_is_directory=True)
    (out / "h.test" / "link.html").symlink_to(victim)
    (out / "h.test" / "dangling").symlink_to(tmp_path / "work" / "nowhere")
    before = snapshot(tmp_path, skip=out)

    result = export_mirror(archive, out, ExportOptions())

    # Nothing appeared or changed outside DIR; the symlinks' targets are untouched.
    assert snapshot(tmp_path, skip=out) == before
    assert list(outside.iterdir()) == []
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "work" / "nowhere").exists()
    # The one URL that needs a folder where a symlink sits is reported, not followed.
    assert any("sym" in error and "in the way" in error for error in result.errors), result.errors
    assert (out / "h.test" / "link.html").is_file() and not (out / "h.test" / "link.html").is_symlink()

    root = out.resolve()
    files: list[Path] = []
    for folder, dirs, names in os.walk(out):
        for name in dirs + names:
            path = Path(folder) / name
            if path.is_symlink():
                assert path.name in ("sym", "dangling")  # the ones the user put there
                continue
            assert path.resolve().is_relative_to(root)
            assert len(name.encode()) <= 255, name
            assert not (set(name) & FORBIDDEN), name
            assert name[-1] not in ". ", name
            assert name.split(".")[0].casefold() not in DEVICES, name
            if path.is_file():
                files.append(path)
    keys = [unicodedata.normalize("NFC", str(p.relative_to(out))).casefold() for p in files]
    assert len(keys) == len(set(keys)), "two files differ only in case or normalization"

    # Each URL has its own file, and every page's links reach the file of their URL.
    manifest = json.loads((out / MANIFEST_NAME).read_text())["files"]
    by_url = {entry["url"]: out / name for name, entry in manifest.items() if entry["url"]}
    assert len(by_url) == len(manifest) - 2  # all but the landing page and the report
    assert len(by_url) >= len(HOSTILE) - 3  # some spellings name the same URL; `sym/` is blocked
    home = by_url[f"{HOST}/"]
    tree = LexborHTMLParser(home.read_text())
    hrefs = [node.attributes["href"] or "" for node in tree.css("a")]
    local = [h for h in hrefs if not urlsplit(h).scheme]
    assert len(local) >= len(HOSTILE) - 6
    for href in local:
        target = (home.parent / unquote(urlsplit(href).path)).resolve()
        assert target.is_relative_to(root) and target.is_file(), href

    # The same archive exports to the same tree, and a zip with the same safe names.
    again = tmp_path / "again"
    export_mirror(archive, again, ExportOptions())
    listing = sorted(p.relative_to(again).as_posix() for p in again.rglob("*") if p.is_file())
    first = sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert [name for name in listing if name != "h.test/sym/inside.html"] == first
    export_mirror(archive, tmp_path / "m.zip", ExportOptions(format="zip"))
    with zipfile.ZipFile(tmp_path / "m.zip") as packed:
        for name in packed.namelist():
            assert not name.startswith("/") and ".." not in name.split("/") and "\\" not in name
