"""`archiver export --format wacz`: structure, digests and index of the WACZ 1.1.1 package."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import struct
import zipfile
from pathlib import Path

from archiver_plugins.mirror.export import ExportOptions, export_mirror
from mirror_site import build_site
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main
from archiver.testing import CrawlFn, Site


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def index_lines(wacz: zipfile.ZipFile) -> list[str]:
    """The CDXJ lines of the package, each gzip block fetched through index.idx as a range reader does."""
    blocks = wacz.read("indexes/index.cdx.gz")
    meta, *entries = wacz.read("indexes/index.idx").decode().splitlines()
    assert meta.startswith("!meta 0 ") and json.loads(meta[8:]) == {
        "format": "cdxj-gzip-1.0",
        "filename": "index.cdx.gz",
    }
    lines: list[str] = []
    for entry in entries:
        prefix, raw = entry.split(" {", 1)
        where = json.loads("{" + raw)
        block = blocks[where["offset"] : where["offset"] + where["length"]]
        assert sha256(block) == where["digest"]
        text = gzip.decompress(block).decode().splitlines()
        assert text[0].startswith(prefix + " ")
        lines.extend(text)
    assert gzip.decompress(blocks).decode().splitlines() == lines  # what pywb reads
    return lines


def local_header(raw: bytes, info: zipfile.ZipInfo) -> tuple[int, int, int]:
    """(compressed size, size, extra field length) of the member's local header."""
    signature, compressed, size, name_length, extra_length = struct.unpack_from(
        "<I14xII2H", raw, info.header_offset
    )
    assert signature == 0x04034B50 and name_length == len(info.filename.encode())
    return compressed, size, extra_length


async def test_wacz_structure_and_digests(
    site: Site, other_site: Site, crawl_archive: CrawlFn, tmp_path: Path
) -> None:
    build_site(site, other_site)
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"))
    target = tmp_path / "site.wacz"
    assert await asyncio.to_thread(main, ["export", str(crawl.archive), str(target)]) == 0

    with zipfile.ZipFile(target) as wacz:
        names = wacz.namelist()
        assert {
            "datapackage.json",
            "datapackage-digest.json",
            "indexes/index.cdx.gz",
            "indexes/index.idx",
            "pages/pages.jsonl",
        } <= set(names)
        warcs = [n for n in names if n.startswith("archive/")]
        assert warcs and all(n.endswith(".warc.gz") for n in warcs)
        for name in [*warcs, "indexes/index.cdx.gz"]:
            assert wacz.getinfo(name).compress_type == zipfile.ZIP_STORED  # seekable in place
        raw = target.read_bytes()
        for info in wacz.infolist():
            # A range reader takes the data offset from the central record when it has no extra.
            assert local_header(raw, info) == (info.compress_size, info.file_size, len(info.extra))

        package = json.loads(wacz.read("datapackage.json"))
        assert package["profile"] == "data-package" and package["wacz_version"] == "1.1.1"
        assert package["mainPageUrl"] == site.url("/")
        listed = {resource["path"]: resource for resource in package["resources"]}
        assert set(listed) == set(names) - {"datapackage.json", "datapackage-digest.json"}
        for path, resource in listed.items():
            data = wacz.read(path)
            assert resource["bytes"] == len(data) and resource["hash"] == sha256(data), path
        digest = json.loads(wacz.read("datapackage-digest.json"))
        assert digest == {"path": "datapackage.json", "hash": sha256(wacz.read("datapackage.json"))}

        lines = wacz.read("pages/pages.jsonl").decode().splitlines()
        assert json.loads(lines[0])["format"] == "json-pages-1.0"
        pages = {row["url"]: row for row in map(json.loads, lines[1:])}
        home = pages[site.url("/")]
        assert home["title"] == "Home page" and "Text in the web font" in home["text"]
        assert home["ts"].endswith("Z") and home["ts"][4] == "-" and home["ts"][10] == "T"
        assert site.url("/docs/page") in pages and site.url("/css/site.css") not in pages
        assert site.url("/old") not in pages  # a redirect is not a page

        index = index_lines(wacz)
        assert index == sorted(index) and len(index) >= 17
        for line in index:
            raw = line.split(" ", 2)[2]
            fields = json.loads(raw)
            assert f"archive/{fields['filename']}" in names
            start, length = int(fields["offset"]), int(fields["length"])
            record = wacz.read(f"archive/{fields['filename']}")[start : start + length]
            first = next(iter(ArchiveIterator(io.BytesIO(record))))
            assert first.rec_headers.get_header("WARC-Target-URI") == fields["url"]


async def test_wacz_of_a_crawl_cut_short(site: Site, crawl_archive: CrawlFn, tmp_path: Path) -> None:
    """A WARC file left `.open` with a cut tail goes in under its final name, cut to whole records."""
    site.page("/", links=["/a", "/b"])
    site.page("/a", "a" * 5000)
    site.page("/b", "b" * 5000)
    crawl = await crawl_archive(site.url("/"), plugins=("links", "warc"))
    (warc,) = (crawl.archive / "warc").glob("*.warc.gz")
    for cdxj in (crawl.archive / "warc").glob("*.cdxj"):
        cdxj.unlink()
    data = warc.read_bytes()
    opened = warc.with_name(warc.name + ".open")
    opened.write_bytes(data[: len(data) - 300])
    warc.unlink()

    result = await asyncio.to_thread(
        export_mirror, crawl.archive, tmp_path / "cut.wacz", ExportOptions(format="wacz")
    )
    assert any("damaged tail" in warning for warning in result.warnings)
    with zipfile.ZipFile(tmp_path / "cut.wacz") as wacz:
        assert f"archive/{warc.name}" in wacz.namelist()
        packed = wacz.read(f"archive/{warc.name}")
        assert data.startswith(packed) and len(packed) < len(data) - 300
        records = list(ArchiveIterator(io.BytesIO(packed)))
        assert records  # whole records only: warcio reads to the end without an error
        index = index_lines(wacz)
        assert index and all(int(json.loads(line.split(" ", 2)[2])["offset"]) < len(packed) for line in index)


def test_compressed_index_blocks_are_found_through_the_idx() -> None:
    """A large index is cut into gzip blocks of INDEX_BLOCK_LINES lines, each one reachable alone."""
    from archiver_plugins.mirror.wacz import INDEX_BLOCK_LINES, compressed_index

    lines = sorted(
        f'com,example)/p/{n:05d} 20240101000000 {{"url": "http://example.com/p/{n:05d}", "offset": "{n}"}}\n'
        for n in range(2 * INDEX_BLOCK_LINES + 10)
    )
    blocks, idx = compressed_index(lines)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("indexes/index.cdx.gz", blocks)
        package.writestr("indexes/index.idx", idx)
    with zipfile.ZipFile(buffer) as package:
        assert index_lines(package) == [line.rstrip("\n") for line in lines]
    entries = idx.splitlines()[1:]
    assert [entry.split(" {")[0] for entry in entries] == [
        lines[n].split(" {")[0] for n in (0, INDEX_BLOCK_LINES, 2 * INDEX_BLOCK_LINES)
    ]
