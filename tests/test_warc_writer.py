"""The WARC writer plugin: pages built by hand, written, then read back with warcio."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.archive_reader import open_archive
from archiver_plugins.warc import WarcWriter
from archiver_plugins.warc.settings import WarcSettings
from archiver_plugins.warc.verify import verify_file
from warcio.archiveiterator import ArchiveIterator

from archiver.config import Config
from archiver.errors import ArchiveError, ConfigError
from archiver.manager import Hooks, make_plugin_manager
from archiver.model import Crawl, Link, LinkKind, Page
from archiver.testing import make_crawl, make_page

ROOT = "http://127.0.0.1:8080/"


def page(path: str = "", body: bytes = b"<html>hi</html>", **fields: Any) -> Page:
    request_headers = (("Host", "127.0.0.1:8080"), ("User-Agent", "test"))
    fields = {"reason": "OK", "request_headers": request_headers, "peer": "127.0.0.1", **fields}
    if "headers" in fields:
        fields["content_type"] = None
    return make_page(ROOT + path, body, **fields)


async def write(
    tmp_path: Path,
    pages: Sequence[Page | tuple[Page, Sequence[Link]]],
    settings: WarcSettings | None = None,
) -> tuple[Crawl, list[Path]]:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(settings or WarcSettings())
    await writer.crawl_started(crawl=crawl)
    try:
        for item in pages:
            p, links = item if isinstance(item, tuple) else (item, [])
            await writer.page_fetched(page=p, links=links, crawl=crawl)
    finally:
        await writer.crawl_finished(crawl=crawl)
    return crawl, sorted((tmp_path / "warc").glob("*.warc.gz"))


def records(path: Path) -> list[dict[str, Any]]:
    """Every record of a file with its headers and payload, digests checked by warcio."""
    out = []
    with path.open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            http = record.http_headers
            out.append(
                {
                    "type": record.rec_type,
                    "warc": dict(record.rec_headers.headers),
                    "http": list(http.headers) if http else [],
                    "statusline": http.statusline if http else None,
                    "payload": record.raw_stream.read(),
                }
            )
    return out


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


async def test_each_exchange_is_a_request_response_pair(tmp_path: Path) -> None:
    links = [Link(ROOT + "a"), Link(ROOT + "style.css", LinkKind.REQUISITE)]
    pages = [
        (page(body=b"<a href=a>a</a>"), links),
        page("old", status=302, reason="Found", body=b"", redirect_to=ROOT + "a",
             headers=(("Location", "/a"),)),
        page("missing", status=404, reason="Not Found", body=b"nope",
             headers=(("Content-Type", "text/plain"),)),
    ]  # fmt: skip
    crawl, files = await write(tmp_path, pages)
    assert len(files) == 1
    found = records(files[0])
    assert found[0]["type"] == "warcinfo"
    assert b"http-header-note: Transfer-Encoding" in found[0]["payload"]
    assert f"root: {ROOT}".encode() in found[0]["payload"]
    responses = [r for r in found if r["type"] == "response"]
    requests = [r for r in found if r["type"] == "request"]
    assert [r["warc"]["WARC-Target-URI"] for r in responses] == [ROOT, ROOT + "old", ROOT + "missing"]
    assert [r["statusline"] for r in responses] == ["200 OK", "302 Found", "404 Not Found"]
    ids = {r["warc"]["WARC-Record-ID"] for r in responses}
    assert {r["warc"]["WARC-Concurrent-To"] for r in requests} == ids
    for response, source in zip(responses, [pages[0][0], pages[1], pages[2]], strict=True):
        assert isinstance(source, Page)
        assert response["payload"] == source.body
        assert response["warc"]["WARC-Payload-Digest"] == sha1(source.body)
        assert response["warc"]["WARC-IP-Address"] == "127.0.0.1"
        assert not response["warc"]["WARC-Target-URI"].startswith("<")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", response["warc"]["WARC-Date"])
    assert requests[0]["statusline"] == "/ HTTP/1.1"  # warcio splits "GET" off as the protocol
    metadata = [r for r in found if r["type"] == "metadata"]
    assert len(metadata) == 3
    assert f"outlink: {ROOT}a page".encode() in metadata[0]["payload"]
    assert f"outlink: {ROOT}style.css requisite".encode() in metadata[0]["payload"]
    assert f"redirect: {ROOT}a".encode() in metadata[1]["payload"]
    assert crawl.stats["warc.records"] == 9
    assert verify_file(files[0]).ok


async def test_chunked_gzip_response_is_stored_dechunked_and_encoded(tmp_path: Path) -> None:
    html = b"<html>" + b"compressible " * 500 + b"</html>"
    encoded = gzip.compress(html)
    headers = (
        ("Content-Type", "text/html"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Encoding", "gzip"),
        ("Vary", "Accept-Encoding"),
    )
    _, files = await write(tmp_path, [page(body=encoded, headers=headers)])
    (response,) = [r for r in records(files[0]) if r["type"] == "response"]
    assert response["http"] == [
        ("Content-Type", "text/html"),
        ("Content-Encoding", "gzip"),
        ("Vary", "Accept-Encoding"),
    ]
    assert response["payload"] == encoded
    assert response["warc"]["WARC-Payload-Digest"] == sha1(encoded)
    with files[0].open("rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type == "response":
                assert record.content_stream().read() == html  # readers undo the gzip
    archive = open_archive(tmp_path)
    stored = archive.read(archive.lookup(ROOT))  # type: ignore[arg-type]
    assert stored.payload == encoded
    assert stored.content() == html
    assert verify_file(files[0]).ok


async def test_identical_payload_becomes_revisit(tmp_path: Path) -> None:
    body = b"<html>same everywhere</html>"
    pages = [page("one", body=body), page("two", body=body), page("e1", body=b""), page("e2", body=b"")]
    crawl, files = await write(tmp_path, pages)
    found = records(files[0])
    first = next(r for r in found if r["type"] == "response")
    (revisit,) = [r for r in found if r["type"] == "revisit"]
    assert revisit["warc"]["WARC-Target-URI"] == ROOT + "two"
    assert revisit["warc"]["WARC-Profile"].endswith("/revisit/identical-payload-digest")
    assert revisit["warc"]["WARC-Refers-To-Target-URI"] == ROOT + "one"
    assert revisit["warc"]["WARC-Refers-To-Date"] == first["warc"]["WARC-Date"]
    assert revisit["warc"]["WARC-Refers-To"] == first["warc"]["WARC-Record-ID"]
    assert revisit["warc"]["WARC-Payload-Digest"] == sha1(body)
    assert revisit["payload"] == b""
    assert revisit["statusline"] == "200 OK"
    # empty bodies are never deduplicated: every one is a plain response
    assert [r["warc"]["WARC-Target-URI"] for r in found if r["type"] == "response"] == [
        ROOT + "one",
        ROOT + "e1",
        ROOT + "e2",
    ]
    assert crawl.stats["warc.revisits"] == 1
    archive = open_archive(tmp_path)
    capture = archive.lookup(ROOT + "two")
    assert capture is not None and capture.is_revisit
    stored = archive.read(capture)
    assert stored.payload == body
    assert stored.revisit_of is not None and stored.revisit_of.url == ROOT + "one"


async def test_dedup_off_writes_full_copies(tmp_path: Path) -> None:
    body = b"<html>same</html>"
    _, files = await write(tmp_path, [page("1", body=body), page("2", body=body)],
                           WarcSettings(dedup=False, metadata=False))  # fmt: skip
    types = [r["type"] for r in records(files[0])]
    assert types == ["warcinfo", "response", "request", "response", "request"]


async def test_files_rotate_at_max_size_with_iipc_names(tmp_path: Path) -> None:
    pages = [page(f"p{i}", body=os.urandom(30_000)) for i in range(7)]
    _, files = await write(tmp_path, pages, WarcSettings(max_size=65_536, prefix="test"))
    assert len(files) >= 3
    serials = []
    for path in files:
        match = re.fullmatch(r"test-(\d{17})-(\d{5})-([\w.-]+)-(\d+)\.warc\.gz", path.name)
        assert match, path.name
        assert int(match.group(4)) == os.getpid()
        serials.append(int(match.group(2)))
        found = records(path)
        assert found[0]["type"] == "warcinfo"
        assert found[0]["warc"]["WARC-Filename"] == path.name
        assert path.with_name(path.name.replace(".warc.gz", ".cdxj")).is_file()
        assert verify_file(path).ok
        # a file only grows past max_size when a single page is larger than it
        assert path.stat().st_size <= 65_536 or len(found) <= 4
    assert serials == sorted(serials) and len(set(serials)) == len(serials)
    assert not list((tmp_path / "warc").glob("*.open"))
    archive = open_archive(tmp_path)
    for p in pages:
        capture = archive.lookup(p.url)
        assert capture is not None
        assert archive.read(capture).payload == p.body


async def test_truncated_body_is_marked(tmp_path: Path) -> None:
    body = b"x" * 1000
    _, files = await write(tmp_path, [page("big", body=body, truncated="length"),
                                      page("again", body=body)])  # fmt: skip
    responses = [r for r in records(files[0]) if r["type"] == "response"]
    assert responses[0]["warc"]["WARC-Truncated"] == "length"
    assert "WARC-Truncated" not in responses[1]["warc"]  # and not a revisit of a cut body
    assert len(responses) == 2


async def test_request_record_shows_what_was_sent(tmp_path: Path) -> None:
    sent = ROOT + "caf%C3%A9?q=a%20b"
    _, files = await write(tmp_path, [page("café?q=a b", request_target=sent)])
    found = records(files[0])
    (request,) = [r for r in found if r["type"] == "request"]
    (response,) = [r for r in found if r["type"] == "response"]
    assert request["warc"]["WARC-Target-URI"] == sent
    assert response["warc"]["WARC-Target-URI"] == sent
    assert request["statusline"] == "/caf%C3%A9?q=a%20b HTTP/1.1"
    assert ("Host", "127.0.0.1:8080") in request["http"]


async def test_awkward_responses_are_archived_faithfully(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    long_value = "v" * 100_000
    pages = [
        page("latin", headers=(("Content-Type", "text/html"), ("X-Name", "caf\xe9"))),
        page("cookies", headers=(("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("set-cookie", "c=3"))),
        page("notype", headers=(), body=b"raw"),
        page("nocontent", status=204, reason="No Content", headers=(), body=b""),
        page("notmodified", status=304, reason="Not Modified", headers=(), body=b""),
        page("long", headers=(("X-Long", long_value),)),
        page("broken", headers=(("X-Bad", "one\r\nInjected: yes"),)),
    ]
    with caplog.at_level(logging.WARNING):
        _, files = await write(tmp_path, pages)
    assert verify_file(files[0]).ok
    raw = gzip.decompress(files[0].read_bytes())
    assert b"X-Name: caf\xe9\r\n" in raw  # the byte as received, not re-encoded
    assert b"Injected: yes" in raw and b"\r\nInjected: yes" not in raw
    assert "line break" in caplog.text
    responses = {
        r["warc"]["WARC-Target-URI"]: r for r in records(files[0]) if r["type"] in ("response", "revisit")
    }
    assert responses[ROOT + "cookies"]["http"] == [
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("set-cookie", "c=3"),
    ]
    assert responses[ROOT + "nocontent"]["statusline"] == "204 No Content"
    assert responses[ROOT + "notmodified"]["payload"] == b""
    assert responses[ROOT + "long"]["http"] == [("X-Long", long_value)]
    cdxj = (tmp_path / "warc").glob("*.cdxj")
    lines = next(cdxj).read_text().splitlines()
    notype = next(line for line in lines if '"url": "' + ROOT + 'notype"' in line)
    assert '"mime"' not in notype


async def test_file_is_open_while_written_and_readable(tmp_path: Path) -> None:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    await writer.page_fetched(page=page(), links=[], crawl=crawl)
    open_file, lines = sorted((tmp_path / "warc").iterdir(), key=lambda p: p.name[-9:])
    assert open_file.name.endswith(".warc.gz.open")
    # its CDXJ lines are on disk as they are written, sorted when the file closes
    assert lines.name == open_file.name.replace(".warc.gz.open", ".cdxj.open")
    assert len(lines.read_text().splitlines()) == 1
    # page_fetched returned: the records are in the file already
    assert [c.url for c in open_archive(tmp_path).iter_captures()] == [ROOT]
    await writer.crawl_finished(crawl=crawl)
    names = sorted(p.name for p in (tmp_path / "warc").iterdir())
    assert [n.rsplit(".", 1)[-1] for n in names] == ["cdxj", "gz"]


async def test_crashed_run_file_is_cut_back_and_closed(tmp_path: Path) -> None:
    await write(tmp_path, [page("a"), page("b", body=b"other")])
    (first,) = (tmp_path / "warc").glob("*.warc.gz")
    (tmp_path / "warc" / first.name.replace(".warc.gz", ".cdxj")).unlink()
    whole = first.read_bytes()
    crashed = first.with_name("crashed-20200101000000000-00000-h-1.warc.gz.open")
    crashed.write_bytes(whole + gzip.compress(b"WARC/1.1\r\nContent-Length: 99\r\n")[:-6])
    first.unlink()
    _, files = await write(tmp_path, [page("c", body=b"new")])
    recovered = crashed.with_name(crashed.name.removesuffix(".open"))
    assert recovered in files and len(files) == 2
    assert recovered.read_bytes() == whole
    assert recovered.with_name(recovered.name.replace(".warc.gz", ".cdxj")).is_file()
    # payloads of the earlier run count for dedup
    _, after = await write(tmp_path, [page("d", body=b"other")])
    (new_file,) = set(after) - set(files)
    newest = [r for r in records(new_file) if r["type"] in ("response", "revisit")]
    assert [r["type"] for r in newest] == ["revisit"]
    assert newest[0]["warc"]["WARC-Refers-To-Target-URI"] == ROOT + "b"


def test_settings_are_checked() -> None:
    def parse_settings(table: dict[str, object]) -> WarcSettings:
        return Config(plugins={"warc": table}).plugin_settings("warc", WarcSettings)

    assert parse_settings({}) == WarcSettings()
    assert parse_settings({"max_size": 100_000_000, "gzip_level": 9}).gzip_level == 9
    with pytest.raises(ConfigError, match=r"\[plugins\.warc\] max_sise: .*max_size"):
        parse_settings({"max_sise": 10})
    with pytest.raises(ConfigError, match="gzip_level"):
        parse_settings({"gzip_level": 0})
    with pytest.raises(ConfigError, match="dedup"):
        parse_settings({"dedup": "yes"})
    with pytest.raises(ConfigError, match="prefix"):
        parse_settings({"prefix": "../etc"})


def test_configure_registers_one_writer_per_run() -> None:
    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.warc"])
    hooks = Hooks(pm)
    hooks.configure(Config(plugins={"warc": {"gzip_level": 1}}))
    hooks.configure(Config(plugins={"warc": {"gzip_level": 2}}))
    writers = [p for p in pm.get_plugins() if isinstance(p, WarcWriter)]
    assert len(writers) == 1 and writers[0].settings.gzip_level == 2
    with pytest.raises(ConfigError, match=r"\[plugins\.warc\] nope: unknown key"):
        hooks.configure(Config(plugins={"warc": {"nope": 1}}))


async def test_fetched_at_is_the_warc_date(tmp_path: Path) -> None:
    when = datetime(2021, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    _, files = await write(tmp_path, [page(fetched_at=when)])
    (response,) = [r for r in records(files[0]) if r["type"] == "response"]
    assert response["warc"]["WARC-Date"] == "2021-03-04T05:06:07.890123Z"
    assert open_archive(tmp_path).lookup(ROOT).timestamp == "20210304050607"  # type: ignore[union-attr]


async def test_cancelled_page_still_leaves_a_whole_file(tmp_path: Path) -> None:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(WarcSettings(gzip_level=9))
    await writer.crawl_started(crawl=crawl)
    pages = [page(f"p{i}", body=os.urandom(100_000)) for i in range(6)]
    tasks = [asyncio.create_task(writer.page_fetched(page=p, links=[], crawl=crawl)) for p in pages]
    await asyncio.sleep(0.005)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await writer.crawl_finished(crawl=crawl)
    assert not list((tmp_path / "warc").glob("*.open"))
    for warc in (tmp_path / "warc").glob("*.warc.gz"):  # none when every page was cancelled early
        report = verify_file(warc)
        assert report.ok, [str(f) for f in report.faults]
        assert (report.records - 1) % 3 == 0


async def test_identical_payloads_written_at_once_become_one_response(tmp_path: Path) -> None:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(WarcSettings())
    await writer.crawl_started(crawl=crawl)
    same = [page(f"same{i}", body=b"<html>the same body</html>") for i in range(12)]
    await asyncio.gather(*(writer.page_fetched(page=p, links=[], crawl=crawl) for p in same))
    await writer.crawl_finished(crawl=crawl)
    (path,) = (tmp_path / "warc").glob("*.warc.gz")
    kinds = [r["type"] for r in records(path) if r["type"] in ("response", "revisit")]
    assert sorted(kinds) == ["response"] + ["revisit"] * 11


async def test_dedup_table_on_disk_follows_the_warc_files(tmp_path: Path) -> None:
    from archiver_plugins.warc.dedup import DedupTable

    from archiver.api import DEDUP_NAME

    await write(tmp_path, [page("a", body=b"first")])
    table = DedupTable(tmp_path / DEDUP_NAME)
    assert table.sync(tmp_path / "warc") == 0  # the run recorded its file: nothing to read again
    found = table.get(sha1(b"first"))
    assert found is not None and found.url == ROOT + "a" and found.record_id
    table.close()
    # an archive from before the table (or merged into): its CDXJ is read once
    (tmp_path / DEDUP_NAME).unlink()
    _, files = await write(tmp_path, [page("b", body=b"first")])
    assert len(files) == 2
    newest = files[-1]
    assert [r["type"] for r in records(newest) if r["type"] in ("response", "revisit")] == ["revisit"]
    # a WARC file removed from the archive takes its rows with it
    for path in files:
        if path != newest:
            path.unlink()
            path.with_name(path.name.replace(".warc.gz", ".cdxj")).unlink()
    _, again = await write(tmp_path, [page("c", body=b"first")])
    (latest,) = set(again) - {newest}
    assert [r["type"] for r in records(latest) if r["type"] in ("response", "revisit")] == ["response"]


def test_request_line_names_the_version_sent_not_the_servers_answer() -> None:
    from archiver_plugins.warc.records import request_line

    from archiver import Page

    page = Page(url="http://example.org/a?b=1", status=200, http_version="HTTP/1.0")
    assert request_line(page) == "GET /a?b=1 HTTP/1.1"


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue  # a thread (the event loop's executor) ended since the listing
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _writer_processes() -> set[int]:
    return {pid for pid in _children(os.getpid()) if b"archiver_plugins.warc.worker" in _cmdline(pid)}


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
async def test_records_are_written_by_a_process_of_its_own(tmp_path: Path) -> None:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(WarcSettings())
    before = _writer_processes()  # an earlier test's unfinished writer may still be there
    await writer.crawl_started(crawl=crawl)
    (worker,) = _writer_processes() - before
    await writer.page_fetched(page=page(), links=[], crawl=crawl)
    await writer.crawl_finished(crawl=crawl)
    assert worker not in _writer_processes() and not _cmdline(worker)  # waited for: no zombie
    assert crawl.stats["warc.records"] == 3 and crawl.stats["warc.files"] == 1


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
async def test_a_dead_writer_process_fails_the_page_instead_of_hanging(tmp_path: Path) -> None:
    crawl = make_crawl(ROOT, archive=tmp_path)
    writer = WarcWriter(WarcSettings())
    before = _writer_processes()
    await writer.crawl_started(crawl=crawl)
    await writer.page_fetched(page=page("kept"), links=[], crawl=crawl)
    (worker,) = _writer_processes() - before
    os.kill(worker, signal.SIGKILL)
    with pytest.raises(ArchiveError, match="WARC writer process exited"):
        await asyncio.wait_for(writer.page_fetched(page=page("lost"), links=[], crawl=crawl), 30)
    with pytest.raises(ArchiveError, match="WARC writer process exited"):
        await asyncio.wait_for(writer.crawl_finished(crawl=crawl), 30)
    # what it had answered for is on disk, and the next run closes the file it left open
    await write(tmp_path, [page("next", body=b"next")])
    urls = [c.url for c in open_archive(tmp_path).iter_captures()]
    assert ROOT + "kept" in urls and ROOT + "next" in urls and ROOT + "lost" not in urls


KILLED_CRAWL = """
import asyncio, sys
from pathlib import Path
from archiver.config import Config
from archiver.model import Crawl
from archiver_plugins.warc import WarcWriter
from archiver_plugins.warc.settings import WarcSettings

async def main():
    crawl = Crawl(config=Config(), archive=Path(sys.argv[1]), roots=())
    await WarcWriter(WarcSettings()).crawl_started(crawl=crawl)
    print("started", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_the_writer_process_dies_with_a_killed_crawl(tmp_path: Path) -> None:
    crawl = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_CRAWL, str(tmp_path), stdout=asyncio.subprocess.PIPE
    )
    assert crawl.stdout is not None
    assert await asyncio.wait_for(crawl.stdout.readline(), 30) == b"started\n"
    (worker,) = {p for p in _children(crawl.pid) if b"archiver_plugins.warc.worker" in _cmdline(p)}
    crawl.kill()
    await crawl.wait()
    for _ in range(200):
        if not _cmdline(worker):  # gone (or a zombie reaped by init)
            break
        await asyncio.sleep(0.05)
    assert not _cmdline(worker)


def test_frames_are_split_only_when_whole() -> None:
    from archiver_plugins.warc.worker import frame, split_frames

    data = frame(("ok", 1, (3, 100, False), [])) + frame(("ok", 2, None, [(30, "x", "note")]))
    buffer = bytearray(data[:-3])
    assert split_frames(buffer) == [("ok", 1, (3, 100, False), [])]
    buffer += data[-3:]
    assert split_frames(buffer) == [("ok", 2, None, [(30, "x", "note")])]
    assert buffer == bytearray()
