"""Readers that survive any archive: bombs, hostile index lines, malformed records.

Every reader (`warc ls`, `warc check`, `export`, `reindex`, `reindex --warc`, `serve`)
runs as a real command in a child process limited in address space and CPU time; each
must finish, name the bad record by file and offset, process the rest of the archive
and stay under `PEAK_MB` of resident memory.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.archive_reader.cdxj import index_warc
from archiver_plugins.archive_reader.reader import open_archive
from archiver_plugins.mirror.names import TEMPORARY_PREFIX
from archiver_plugins.mirror.sinks import MANIFEST_NAME
from archiver_plugins.replay.app import make_app
from hostile_archive import MIB, record_bomb, run_archiver, write_warc, zeros_gzip
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HOST = "http://h.test"
HTML = [("Content-Type", "text/html; charset=utf-8")]
PEAK_MB = 400
BOMB_MIB = 1024
"""The record bomb: 1 GiB of zeros in a 1 MB gzip member."""
GZIP_BODY_MIB = 256
"""The body bomb: a 256 KB gzip body of 256 MiB (stored as sent, Content-Encoding: gzip)."""


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = tmp_path_factory.mktemp("bombs") / "archive"
    pages = [
        (f"{HOST}/", b'<title>home</title><a href="/a">a</a> <a href="/gz">gz</a> zebra', HTML),
        (f"{HOST}/a", b"<title>a</title> zebra", HTML),
        (
            f"{HOST}/gz",
            zeros_gzip(b"<title>gz</title>", GZIP_BODY_MIB),
            [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
        ),
    ]
    write_warc(archive / "warc" / "a-good.warc.gz", pages)
    (archive / "warc" / "b-bomb.warc.gz").write_bytes(record_bomb(f"{HOST}/bomb", BOMB_MIB))
    return archive


@pytest.mark.parametrize(
    "command",
    ["warc ls", "warc check", "export", "reindex", "reindex --warc"],
)
def test_bombs_are_reported_in_bounded_memory(bombs: Path, tmp_path: Path, command: str) -> None:
    bomb = bombs / "warc" / "b-bomb.warc.gz"
    args: list[str | Path] = {
        "warc ls": ["warc", "ls", bombs],
        "warc check": ["warc", "check", bombs],
        "export": ["export", bombs, tmp_path / "out"],
        "reindex": ["reindex", bombs],
        "reindex --warc": [
            "reindex",
            "--warc",
            bomb,
            bombs / "warc" / "a-good.warc.gz",
            "-o",
            tmp_path / "x",
        ],
    }[command]
    ran = run_archiver(*args, cwd=tmp_path)
    print(f"{command}: exit {ran.code}, peak RSS {ran.peak_mb:.0f} MB")
    assert ran.code == 1, (ran.out, ran.err)
    assert "Traceback" not in ran.err, ran.err
    # reindex --warc reads the copy it placed in the new archive
    reported = tmp_path / "x" / "warc" / bomb.name if command == "reindex --warc" else bomb
    assert re.search(rf"{re.escape(str(reported))}: offset 0: .*more than \d+ bytes", ran.out + ran.err), ran
    assert ran.peak_mb < PEAK_MB
    if command == "warc ls":
        assert f"{HOST}/a" in ran.out and f"{HOST}/gz" in ran.out
    if command == "export":
        assert (tmp_path / "out" / "h.test" / "a.html").is_file()
        assert f"{HOST}/gz: " in ran.err and "decompression cap" in ran.err
    if command.startswith("reindex"):
        assert "indexed 2 pages" in ran.out  # home and /a; /gz passes the decompression cap
        assert f"{HOST}/gz: decoded body exceeds" in ran.err


async def test_serve_stays_bounded_over_bombs(bombs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "archiver", "serve", str(bombs), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        match = re.search(rb"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        base = match.group(1).decode()
        async with ClientSession(auto_decompress=False) as session:

            async def get(path: str) -> tuple[int, dict[str, str], bytes]:
                async with session.get(base + path) as response:
                    return response.status, dict(response.headers), await response.read()

            status, _h, body = await asyncio.wait_for(get("browse"), 60)
            assert status == 200 and b"h.test" in body
            replays = [get(f"replay/20240101000000id_/{HOST}/gz") for _ in range(6)]
            replays += [get(f"replay/20240101000000/{HOST}/gz")]
            for status, headers, body in await asyncio.wait_for(asyncio.gather(*replays), 60):
                assert status == 200
                assert headers.get("Content-Encoding") == "gzip"  # sent as stored: the browser inflates
                assert len(body) < MIB
            status, _h, body = await asyncio.wait_for(get(f"replay/20240102000000id_/{HOST}/bomb"), 60)
            assert status == 404
        peak = _peak_mb(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(process.communicate(), 30)
    print(f"serve: peak RSS {peak:.0f} MB")
    assert re.search(rb"b-bomb.warc.gz: offset 0: .*more than \d+ bytes", err), err
    assert peak < PEAK_MB


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found, status
    return int(found.group(1)) / 1024


# -- index lines naming files outside the archive -------------------------------------------


def _cdxj(archive: Path, lines: list[str]) -> None:
    (archive / "warc" / "a.cdxj").write_text("".join(sorted(line + "\n" for line in lines)))


@pytest.fixture
def escaping_index(tmp_path: Path) -> Path:
    """ARCHIVE's index also lists a record of another archive, by relative and absolute path."""
    other = tmp_path / "other.archive" / "warc" / "F.warc.gz"
    write_warc(other, [(f"{HOST}/secret", b"<title>secret</title>SECRET-BODY", HTML)])
    archive = tmp_path / "archive"
    write_warc(archive / "warc" / "a.warc.gz", [(f"{HOST}/", b"<title>home</title>home", HTML)])
    own = list(index_warc(archive / "warc" / "a.warc.gz"))
    (secret,) = index_warc(other)
    names = ["../../other.archive/warc/F.warc.gz", str(other), "../F.warc.gz"]
    _cdxj(archive, [c.to_cdxj() for c in own] + [replace(secret, filename=name).to_cdxj() for name in names])
    return archive


def test_index_cannot_name_a_file_outside_the_archive(escaping_index: Path, tmp_path: Path) -> None:
    warcs = open_archive(escaping_index)
    assert warcs.lookup(f"{HOST}/secret") is None
    assert warcs.lookup(f"{HOST}/") is not None
    assert len(warcs.problems) == 3 and all("not a WARC file in this folder" in p for p in warcs.problems)
    ran = run_archiver("export", escaping_index, tmp_path / "out", cwd=tmp_path)
    assert ran.code == 1 and "Traceback" not in ran.err
    assert "../../other.archive/warc/F.warc.gz" in ran.err
    assert (tmp_path / "out" / "h.test" / "index.html").is_file()
    exported = [p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not any(b"SECRET-BODY" in data for data in exported)


async def test_serve_does_not_replay_a_file_outside_the_archive(escaping_index: Path) -> None:
    client = TestClient(TestServer(make_app([escaping_index]), host="127.0.0.1"))
    await client.start_server()
    try:
        for path in (f"/replay/20240101000000id_/{HOST}/secret", f"/replay/20240101000000/{HOST}/secret"):
            response = await client.get(path)
            assert response.status == 404, path
            assert "SECRET-BODY" not in await response.text()
        response = await client.get(f"/replay/20240101000000id_/{HOST}/")
        assert response.status == 200
    finally:
        await client.close()


# -- malformed records and index lines ------------------------------------------------------


def _without_uri(path: Path) -> None:
    """Three records; the middle one has no WARC-Target-URI."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url in (f"{HOST}/", f"{HOST}/nouri", f"{HOST}/b"):
            body = b"<title>t</title>page " + url.encode()
            http = StatusAndHeaders("200 OK", HTML, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http
            )
            if url.endswith("nouri"):
                record.rec_headers.remove_header("WARC-Target-URI")
            writer.write_record(record)


@pytest.mark.parametrize("command", ["warc ls", "export", "reindex"])
def test_record_without_target_uri(tmp_path: Path, command: str) -> None:
    archive = tmp_path / "archive"
    warc = archive / "warc" / "a.warc.gz"
    _without_uri(warc)
    args: list[str | Path] = {
        "warc ls": ["warc", "ls", archive],
        "export": ["export", archive, tmp_path / "out"],
        "reindex": ["reindex", archive],
    }[command]
    ran = run_archiver(*args, cwd=tmp_path)
    assert "Traceback" not in ran.err, ran.err
    assert ran.code == 1, ran
    assert re.search(rf"{re.escape(str(warc))}: offset \d+: not a readable WARC record", ran.err), ran.err
    if command == "warc ls":
        assert f"{HOST}/b" in ran.out
    if command == "export":
        assert (tmp_path / "out" / "h.test" / "b.html").is_file()
    if command == "reindex":
        assert "indexed 2 pages" in ran.out


async def test_serve_skips_a_record_without_target_uri(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    _without_uri(archive / "warc" / "a.warc.gz")
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        assert (await client.get("/browse")).status == 200
        response = await client.get(f"/replay/20240101000000id_/{HOST}/b")
        assert response.status == 200 and (await response.read()).endswith(b"/b")
    finally:
        await client.close()


def test_huge_content_length_is_a_fault(tmp_path: Path) -> None:
    warc = tmp_path / "huge.warc.gz"
    header = (
        b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        b"Content-Length: 99999999999999999999\r\n\r\nabc\r\n\r\n"
    )
    warc.write_bytes(gzip.compress(header))
    good = tmp_path / "good.warc.gz"
    write_warc(good, [(f"{HOST}/", b"fine", HTML)])
    ran = run_archiver("warc", "check", warc, good, cwd=tmp_path)
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    assert f"{warc}: offset 0: " in ran.out and "Content-Length" in ran.out
    assert f"ok {good}" in ran.out


@pytest.mark.parametrize("command", ["warc ls", "export"])
def test_garbage_index_lines(tmp_path: Path, command: str) -> None:
    archive = tmp_path / "archive"
    warc = archive / "warc" / "a.warc.gz"
    write_warc(warc, [(f"{HOST}/", b"<title>home</title>", HTML), (f"{HOST}/b", b"<title>b</title>", HTML)])
    lines = [c.to_cdxj() for c in index_warc(warc)]
    lines += ["garbage", 'h,test)/x 20240101000000 {"url": "http://h.test/x"', "a b [1]", "z z {}"]
    _cdxj(archive, lines)
    with (archive / "warc" / "a.cdxj").open("ab") as handle:
        handle.write(b"\xff\xfe not utf-8\n")
    args: list[str | Path] = (
        ["warc", "ls", archive] if command == "warc ls" else ["export", archive, tmp_path / "out"]
    )
    ran = run_archiver(*args, cwd=tmp_path)
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    assert len(re.findall(r"a\.cdxj: line \d+: not a CDXJ line", ran.err)) == 5, ran.err
    if command == "warc ls":
        assert f"{HOST}/b" in ran.out
    else:
        assert (tmp_path / "out" / "h.test" / "b.html").is_file()


def test_empty_index_beside_an_intact_warc(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    warc = archive / "warc" / "a.warc.gz"
    write_warc(warc, [(f"{HOST}/", b"<title>home</title>", HTML), (f"{HOST}/b", b"<title>b</title>", HTML)])
    (archive / "warc" / "a.cdxj").write_bytes(b"")
    ran = run_archiver("export", archive, tmp_path / "out", cwd=tmp_path)
    assert ran.code == 0, ran
    assert (tmp_path / "out" / "h.test" / "b.html").is_file()


def test_edited_export_manifest(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    warc = archive / "warc" / "a.warc.gz"
    write_warc(warc, [(f"{HOST}/", b"<title>home</title>", HTML), (f"{HOST}/b", b"<title>b</title>", HTML)])
    out = tmp_path / "out"
    assert run_archiver("export", archive, out, cwd=tmp_path).code == 0
    manifest = out / MANIFEST_NAME
    data = json.loads(manifest.read_text())
    entry = data["files"]["h.test/b.html"]
    (tmp_path / "outside").write_text("not ours")
    edits: list[dict[str, object]] = [
        {"h.test/b.html": {**entry, "missing": [["only-one"]]}},
        {"h.test/b.html": {**entry, "missing": "not a list"}},
        {"../outside": entry, "h.test//x": entry, "h.test/index.html": {**entry, "size": "big"}},
        {"h.test/c.html": "not an entry"},
    ]
    for edit in edits:
        edited = json.loads(manifest.read_text())
        edited["files"].update(edit)
        manifest.write_text(json.dumps(edited))
        ran = run_archiver("export", archive, out, cwd=tmp_path)
        assert ran.code == 0 and "Traceback" not in ran.err, (edit, ran)
        assert (out / "h.test" / "b.html").is_file() and (tmp_path / "outside").is_file()
        assert "../outside" not in json.loads(manifest.read_text())["files"]


def test_reindex_of_a_file_that_is_not_a_warc(tmp_path: Path) -> None:
    good = tmp_path / "good.warc.gz"
    write_warc(good, [(f"{HOST}/", b"<title>home</title>zebra", HTML)])
    text = tmp_path / "notwarc.txt"
    text.write_text("just some text\n")
    ran = run_archiver("reindex", "--warc", text, good, "-o", tmp_path / "x", cwd=tmp_path)
    assert ran.code == 2 and "Traceback" not in ran.err, ran
    assert f"{text}: a WARC file's name ends in .warc.gz, .warc, .arc.gz, .arc or .wacz" in ran.err
    disguised = tmp_path / "notwarc.warc.gz"
    disguised.write_text("just some text\n")
    ran = run_archiver("reindex", "--warc", disguised, good, "-o", tmp_path / "y", cwd=tmp_path)
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    assert f"{tmp_path / 'y' / 'warc' / disguised.name}: offset 0: not a WARC record" in ran.err
    assert "indexed 1 page from 2 WARC files" in ran.out


# -- export temporaries ---------------------------------------------------------------------


def test_zip_temporary_does_not_follow_a_symlink(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    write_warc(archive / "warc" / "a.warc.gz", [(f"{HOST}/", b"<title>home</title>", HTML)])
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    for name in ("P.zip", "P.wacz"):
        (tmp_path / f"{name}.partial").symlink_to(victim)
        ran = run_archiver("export", archive, tmp_path / name, cwd=tmp_path)
        assert ran.code == 0, ran
        assert victim.read_text() == "keep me"
        assert zipfile.is_zipfile(tmp_path / name)
        assert not (tmp_path / f"{name}.partial").exists()


def test_paths_named_like_temporaries(tmp_path: Path) -> None:
    """A URL named like the temporary file of another exported file is exported beside it."""
    archive = tmp_path / "archive"
    names = ["a.html", "b", "index.html"]
    temporaries = [TEMPORARY_PREFIX + hashlib.sha1(n.encode()).hexdigest()[:16] + ".tmp" for n in names]
    urls = [
        f"{HOST}/a.html",
        f"{HOST}/b",
        *(f"{HOST}/{t}" for t in temporaries),
        f"{HOST}/{temporaries[1]}/x",
    ]
    write_warc(
        archive / "warc" / "a.warc.gz", [(url, f"<title>{url}</title>".encode(), HTML) for url in urls]
    )
    out = tmp_path / "out"
    for _ in range(2):
        ran = run_archiver("export", archive, out, cwd=tmp_path)
        assert ran.code == 0 and "Traceback" not in ran.err, ran
        listed = json.loads((out / MANIFEST_NAME).read_text())["files"]
        for key, entry in listed.items():
            assert (out / key).is_file(), key
            if entry["url"]:
                assert entry["url"].encode() in (out / key).read_bytes()
        assert len([e for e in listed.values() if e["url"]]) == len(urls)
        assert not list(out.rglob(TEMPORARY_PREFIX + "*"))


def _wacz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wacz:
        for name, data in members.items():
            wacz.writestr(name, data)
    return path


def test_a_wacz_zip_bomb_writes_nothing(tmp_path: Path) -> None:
    """Issue 42 point 8: 1 GiB of zeros in a 1 MB WACZ member was written out whole by
    `reindex --warc` (and `serve`, into /tmp); it is one line naming the member."""
    good = tmp_path / "good.warc.gz"
    write_warc(good, [(f"{HOST}/", b"<title>home</title> zebra", HTML)])
    bomb = tmp_path / "bomb.wacz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as wacz:
        wacz.write(good, "archive/good.warc.gz")
        with wacz.open("archive/zeros.warc", "w", force_zip64=True) as member:
            for _ in range(BOMB_MIB):
                member.write(bytes(MIB))
    assert bomb.stat().st_size < 3 * MIB
    ran = run_archiver("reindex", "--warc", bomb, "-o", tmp_path / "a", cwd=tmp_path)
    assert ran.code == 2 and len(ran.err.strip().splitlines()) == 1, ran.err
    assert "archive/zeros.warc unpacks" in ran.err and "a zip bomb" in ran.err
    written = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file() and p != bomb)
    assert written < 10 * MIB, written
    assert ran.peak_mb < PEAK_MB


def _one_line_pages_wacz(path: Path, warc: Path) -> Path:
    """A WACZ whose pages.jsonl is 80 MiB in one line, built in a function of its own: its
    buffers are freed before the child starts, whose peak RSS counts the test's own pages at
    the fork."""
    pages = b'{"format": "json-pages-1.0"}\n{"url": "' + b"x" * (80 * MIB) + b'"}\n'
    return _wacz(path, {"archive/good.warc.gz": warc.read_bytes(), "pages/pages.jsonl": pages})


def test_a_wacz_page_list_of_one_huge_line_is_left_out(tmp_path: Path) -> None:
    """A pages.jsonl of 80 MiB in one line (deflated to little) is not kept; the WARC files
    are; a kept pages.jsonl with a 1 MiB line is read around it."""
    good = tmp_path / "good.warc.gz"
    write_warc(good, [(f"{HOST}/", b"<title>home</title> zebra", HTML)])
    wacz = _one_line_pages_wacz(tmp_path / "big.wacz", good)
    ran = run_archiver("reindex", "--warc", wacz, "-o", tmp_path / "a", cwd=tmp_path)
    assert ran.code == 0, ran.err
    assert "pages/pages.jsonl unpacks" in ran.err and "its page titles are not kept" in ran.err
    assert not list((tmp_path / "a" / "warc").glob("*.pages.jsonl"))
    assert ran.peak_mb < PEAK_MB, ran.peak_mb
    listed = (
        b'{"format": "json-pages-1.0"}\n{"url": "'
        + os.urandom(MIB // 2).hex().encode()
        + b'"}\n'
        + json.dumps({"url": f"{HOST}/", "title": "Listed title"}).encode()
        + b"\n"
    )
    wacz = _wacz(
        tmp_path / "long.wacz", {"archive/good.warc.gz": good.read_bytes(), "pages/pages.jsonl": listed}
    )
    ran = run_archiver("reindex", "--warc", wacz, "-o", tmp_path / "b", cwd=tmp_path)
    assert ran.code == 0 and not ran.err, ran.err
    assert list((tmp_path / "b" / "warc").glob("*.pages.jsonl"))


@pytest.mark.parametrize("command", ["warc ls", "reindex --warc"])
def test_an_arc_record_length_past_any_file(tmp_path: Path, command: str) -> None:
    """Issue 42 point 12: an ARC header saying 10^15 bytes made the skip seek past what the
    file system allows (a traceback); the record is named as cut off."""
    body = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hi</html>"
    head = (
        b"filedesc://x.arc 0.0.0.0 20200101000000 text/plain 77\n"
        b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    )
    arc = tmp_path / "x.arc"
    arc.write_bytes(
        head + b"\nhttp://h.test/ 1.2.3.4 20200101000000 text/html 1000000000000000\n" + body + b"\n"
    )
    args = [arc] if command == "warc ls" else [arc, "-o", tmp_path / "a"]
    ran = run_archiver(*command.split(), *args, cwd=tmp_path)
    assert ran.code != 0 and "Traceback" not in ran.err, ran.err
    assert "ARC record cut off: its header says 1000000000000000 bytes" in ran.err
