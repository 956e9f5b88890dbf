"""Other tools' archives (ARC, WACZ, WARCs of Heritrix, wget, gowarc, Webrecorder, py-wacz)
imported, searched, replayed and exported as their own tools show them.

For each file of the corpus (`foreign_archives`): `reindex --warc` takes it, a search finds
a word known to be there, every capture replays by ``id_`` with the payload warcio reads
from the original file, `warc ls` lists as many captures as warcio reads, `warc check`
passes, and the export never sends the reader to the live web by itself.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.replay.app import make_app
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main
from tests.foreign_archives import SAMPLES, SHIPPED, Sample, warc_members_of

CAPTURE_TYPES = ("response", "revisit", "resource")


async def cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


def warcio_captures(path: Path) -> list[tuple[str, str, str, bytes | None]]:
    """(type, URL, 14-digit time, payload as a browser gets it) of each capture, read by warcio."""
    found = []
    for data in warc_members_of(path):
        if data.startswith(b"\x1f\x8b"):
            data = gzip.decompress(data)  # warcio refuses a one-stream file: read it whole
        for item in ArchiveIterator(io.BytesIO(data), arc2warc=True):
            if item.rec_type not in CAPTURE_TYPES:
                continue
            url = item.rec_headers.get_header("WARC-Target-URI")
            stamp = re.sub(r"\D", "", item.rec_headers.get_header("WARC-Date"))[:14]
            raw = item.content_stream().read() if item.rec_type != "revisit" else None
            found.append((item.rec_type, url, stamp, raw))
    return found


def expected_payload(kind: str, url: str, captures: list[tuple[str, str, str, bytes | None]]) -> bytes:
    """A revisit's payload is its original's: the response of the same digest (same body here)."""
    if kind != "revisit":
        raise AssertionError
    return next(raw for k, _u, _t, raw in captures if k == "response" and raw is not None)


@pytest.mark.parametrize("sample", SAMPLES + SHIPPED, ids=lambda s: s.name)
async def test_a_foreign_archive_is_read_whole_and_replayed_right(
    sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / sample.name
    sample.write(source)
    archive = tmp_path / "archive"
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 0, capsys.readouterr().err
    assert await cli("warc", "check", str(archive), "-q") == (0 if sample.valid else 1), (
        capsys.readouterr().out
    )
    capsys.readouterr()
    assert await cli("search", str(archive), sample.word, "--json") == 0
    assert sample.word.lower() in capsys.readouterr().out.lower()

    captures = warcio_captures(source)
    assert await cli("warc", "ls", str(archive), "--json") == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(captures)  # no metadata or request record counts as a capture

    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        for kind, url, stamp, raw in captures:
            answer = await client.get(f"/replay/{stamp}id_/{url}", allow_redirects=False)
            body = await answer.read()
            if url in sample.missing:
                assert answer.status == 503, (url, answer.status)
                assert "revisit" in body.decode() and "does not hold" in body.decode()
                continue
            assert answer.status < 500, (url, answer.status, body[:200])
            wanted = raw if raw is not None else expected_payload(kind, url, captures)
            assert body == wanted, (url, body[:80], wanted[:80])
            if kind == "resource":
                assert answer.headers["Content-Type"].startswith("text/html")
    finally:
        await client.close()

    mirror = tmp_path / "mirror"
    code = await cli("export", str(archive), str(mirror))
    err = capsys.readouterr().err
    assert code == (1 if sample.missing else 0), err
    for missing in sample.missing:
        assert missing in err
    for page in mirror.rglob("*.html"):
        for refresh in re.findall(r'http-equiv="refresh" content="[^"]*url=([^"]*)"', page.read_text()):
            assert not refresh.startswith(("http:", "https:")), (page, refresh)


async def test_metadata_never_answers_a_replay(tmp_path: Path) -> None:
    """Heritrix's metadata record has the response's URL and second: the JPEG is served."""
    source = tmp_path / "heritrix.warc.gz"
    SAMPLES[0].write(source)
    archive = tmp_path / "archive"
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 0
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        answer = await client.get("/replay/20080430204829id_/http://www.archive.org/images/logoc.jpg")
        assert answer.headers["Content-Type"] == "image/jpeg"
        assert (await answer.read()).startswith(b"\xff\xd8")
    finally:
        await client.close()


async def test_chunked_bodies_are_replayed_and_exported_without_framing(tmp_path: Path) -> None:
    for name in ("wget-chunked.warc", "gowarc-chunked-gzip.warc.gz"):
        sample = next(s for s in SAMPLES if s.name == name)
        sample.write(tmp_path / name)
    archive = tmp_path / "archive"
    files = [str(tmp_path / "wget-chunked.warc"), str(tmp_path / "gowarc-chunked-gzip.warc.gz")]
    assert await cli("reindex", "--warc", *files, "-o", str(archive)) == 0
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        plain = await client.get("/replay/20140101000001/http://chunked.test/")
        text = await plain.text()
        assert "sandpiper" in text and "\r\n0\r\n" not in text
        assert "Transfer-Encoding" not in plain.headers or plain.headers["Transfer-Encoding"] == "chunked"
        framed = await client.get("/replay/20230301000000id_/http://gowarc.test/", auto_decompress=False)
        assert framed.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(await framed.read()).startswith(b"<!doctype html>")
    finally:
        await client.close()
    mirror = tmp_path / "mirror"
    assert await cli("export", str(archive), str(mirror)) == 0
    pages = {p.parent.name: p.read_bytes() for p in mirror.rglob("index.html") if p.parent != mirror}
    assert pages["chunked.test"].startswith(b"<!doctype html>") and b"sandpiper" in pages["chunked.test"]
    assert pages["gowarc.test"].startswith(b"<!doctype html>") and b"kittiwake" in pages["gowarc.test"]


async def test_a_one_stream_warc_given_as_is_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read where it lies (`warc ls FILE`), a one-stream file is named, not read in part."""
    source = tmp_path / "one-stream.warc.gz"
    next(s for s in SAMPLES if s.name == source.name).write(source)
    assert await cli("warc", "ls", str(source)) == 1
    err = capsys.readouterr().err
    assert "one gzip stream holds several records" in err and "reindex --warc" in err
    assert await cli("warc", "check", str(source)) == 1


async def test_a_wacz_keeps_its_page_list(tmp_path: Path) -> None:
    source = tmp_path / "browsertrix.wacz"
    SAMPLES[-1].write(source)
    archive = tmp_path / "archive"
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 0
    assert (archive / "warc" / "browsertrix-data.warc.gz").is_file()
    assert '"title": "Packed"' in (archive / "warc" / "browsertrix.pages.jsonl").read_text()
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 0  # again: same files
    with zipfile.ZipFile(source, "w") as packed:  # a different WACZ of the same name
        packed.writestr(
            "archive/data.warc.gz", gzip.compress(b"WARC/1.0\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
        )
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 2


async def test_serve_takes_a_wacz_and_an_arc_file_as_they_are(tmp_path: Path) -> None:
    wacz, arc = tmp_path / "browsertrix.wacz", tmp_path / "old.arc.gz"
    SAMPLES[-1].write(wacz)
    next(s for s in SAMPLES if s.name == arc.name).write(arc)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        "serve",
        str(wacz),
        str(arc),
        "--port",
        "0",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    unpacked = ""
    try:
        assert process.stdout is not None and process.stderr is not None
        unpacked = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        indexed = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        assert indexed.startswith(f"Indexed {arc} into ") and "for search" in indexed, indexed
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        served = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert served, line
        async with ClientSession() as session:
            async with session.get(served.group(1) + "search?q=gannet") as found:
                assert found.status == 200 and "Packed" in await found.text()
            async with session.get(
                served.group(1) + "replay/20240202000001id_/https://wacz.test/second"
            ) as page:
                assert page.status == 200 and "fulmar" in await page.text()
            async with session.get(served.group(1) + "replay/20010101000001id_/http://old.test/") as page:
                assert page.status == 200 and "albatross" in await page.text()
            async with session.get(served.group(1) + "search?q=albatross") as found:  # the bare ARC file
                text = await found.text()
                assert found.status == 200 and "http://old.test/" in text, text
                assert "has no search index" not in text
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    folder = re.search(r"into (\S+) ", unpacked)
    assert folder, unpacked
    gone = not await asyncio.to_thread(Path(folder.group(1)).exists)
    assert gone  # the unpacked copy is removed with the server
    assert arc.is_file()  # linked there, never moved


def test_an_arc_record_whose_url_has_spaces_is_read(tmp_path: Path) -> None:
    """Old crawlers wrote URLs as found, spaces included (warcio's example-space-in-url.arc)."""
    from archiver_plugins.archive_reader.members import iter_members, parse_record

    from tests.foreign_archives import arc_record

    http = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nskua"
    arc = tmp_path / "spaces.arc"
    arc.write_bytes(
        b"".join(
            arc_records_with(
                arc_record(
                    "http://a.test/x?q=two words&r=1", "10.0.0.2", "20010101000009", "text/plain", http
                )
            )
        )
    )
    with arc.open("rb") as handle:
        members = list(iter_members(handle))
    assert [m.problem for m in members] == [None, None]
    record = parse_record(members[1], arc)
    assert record.rec_headers.get_header("WARC-Target-URI") == "http://a.test/x?q=two%20words&r=1"
    assert record.raw_stream.read().endswith(b"skua")


def arc_records_with(extra: bytes) -> list[bytes]:
    from tests.foreign_archives import arc_records

    return [arc_records("spaces.arc")[0], extra]


async def test_a_wacz_entry_is_imported_only_under_a_plain_name(tmp_path: Path) -> None:
    source = tmp_path / "odd.wacz"
    SAMPLES[-1].write(source)
    with zipfile.ZipFile(source) as packed:
        warc = packed.read("archive/data.warc.gz")
    with zipfile.ZipFile(source, "a") as packed:
        for name in ("archive/.hidden.warc.gz", "archive/a\\b.warc.gz", "archive/x/../y.warc.gz"):
            packed.writestr(name, warc)
    archive = tmp_path / "archive"
    assert await cli("reindex", "--warc", str(source), "-o", str(archive)) == 0
    held = sorted(p.name for p in (archive / "warc").iterdir() if p.name.endswith(".warc.gz"))
    assert held == ["odd-data.warc.gz"]


async def test_a_wacz_page_list_titles_its_pages_in_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pages.jsonl holds the title the capturing browser showed: search shows it, as ReplayWeb.page."""
    import json

    source, retitled = tmp_path / "browsertrix.wacz", tmp_path / "shelf.wacz"
    SAMPLES[-1].write(source)
    with zipfile.ZipFile(source) as packed, zipfile.ZipFile(retitled, "w") as out:
        for entry in packed.infolist():
            data = packed.read(entry)
            if entry.filename == "pages/pages.jsonl":
                data = data.replace(b'"title": "Packed"', b'"title": "Seabird ledger"')
            out.writestr(entry, data)
    archive = tmp_path / "archive"
    assert await cli("reindex", "--warc", str(retitled), "-o", str(archive)) == 0
    capsys.readouterr()
    assert await cli("search", "--json", str(archive), "ledger") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert [(hit["url"], hit["title"]) for hit in hits] == [("https://wacz.test/", "Seabird ledger")]
