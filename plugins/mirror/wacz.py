"""`--format wacz`: the archive packed as one WACZ 1.1.1 file for ReplayWeb.page and pywb.

Layout (https://specs.webrecorder.net/wacz/1.1.1/):

    archive/*.warc.gz          the WARC files, stored (not deflated) so readers can seek
    indexes/index.cdx.gz       every response/revisit but an update's 304s, sorted CDXJ in gzip blocks, stored
    indexes/index.idx          the first key and byte range of each block
    pages/pages.jsonl          one line per HTML page: url, ts, title, text (rendered, if it was)
    datapackage.json           each file's path, size and sha256
    datapackage-digest.json    the sha256 of datapackage.json

The index is the compressed CDXJ that py-wacz writes: ReplayWeb.page loads the small
``index.idx`` and fetches only the blocks a lookup needs, while pywb reads ``*.cdx.gz``
whole (concatenated gzip members read as one stream). Every member's local header and
central directory record agree: ZIP64 fields only on a member over 4 GiB, in both places,
because range readers take the data offset from the central record alone when it has no
extra field.

A WARC file still being written (``.open``) goes in under its final name; a WARC file
with a damaged tail goes in cut back to its last whole record, with only the index lines
of the records it still holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import Path as FsPath
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from archiver.api import (
    CONFIG_NAME,
    ArchiveError,
    __version__,
    choose_encoding,
    saved_config,
    unredacted_secrets,
)

from ..archive_reader.reader import Capture, WarcArchive
from .contents import HTML_TYPES
from .options import ExportOptions, ExportResult, check_output, mtime_of, open_warcs, start_pages
from .plan import Item, build_plan
from .sinks import ExclusiveZip, zip_time
from .tail import check_tail

__all__ = ["WACZ_VERSION", "export_wacz"]

WACZ_VERSION = "1.1.1"
MAX_TEXT = 100_000
_COPY_CHUNK = 1024 * 1024
INDEX_BLOCK_LINES = 1024
INDEX_DATA = "index.cdx.gz"
_OPEN = ".open"
_NAME_CHARS = re.compile(r"[^-a-z0-9._/]")


def _rfc3339(timestamp: str) -> str:
    t = timestamp
    return f"{t[0:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}Z"


def _resource_name(path: str) -> str:
    return _NAME_CHARS.sub("-", path.rsplit("/", 1)[-1].lower()) or "file"


class _Package:
    """The zip being written, recording each entry's digest and size for datapackage.json."""

    def __init__(self, partial: FsPath, mtime: float | None) -> None:
        self.zip: zipfile.ZipFile = ExclusiveZip(partial)
        self.resources: list[dict[str, Any]] = []
        self.date = zip_time(mtime)

    def _info(self, path: str, stored: bool) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(path, date_time=self.date)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
        return info

    def add(self, path: str, data: bytes, *, listed: bool = True, stored: bool = False) -> str:
        self.zip.writestr(self._info(path, stored=stored), data)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if listed:
            self.resources.append(
                {"name": _resource_name(path), "path": path, "hash": digest, "bytes": len(data)}
            )
        return digest

    def copy(self, path: str, source: FsPath, length: int) -> None:
        digest = hashlib.sha256()
        # file_size stays 0 so zipfile does not guess ZIP64 from it (it would at 95% of
        # the limit, where the central record has none).
        zip64 = length > zipfile.ZIP64_LIMIT
        with (
            source.open("rb") as handle,
            self.zip.open(self._info(path, stored=True), "w", force_zip64=zip64) as out,
        ):
            left = length
            while left > 0:
                chunk = handle.read(min(_COPY_CHUNK, left))
                if not chunk:
                    raise ArchiveError(f"{source} shrank while it was being packed")
                digest.update(chunk)
                out.write(chunk)
                left -= len(chunk)
        self.resources.append(
            {
                "name": _resource_name(path),
                "path": path,
                "hash": "sha256:" + digest.hexdigest(),
                "bytes": length,
            }
        )


def _not_modified(capture: Capture) -> bool:
    """A server-not-modified revisit (an update's 304) stays in the WARC files but not in the
    index: ReplayWeb.page, like pywb, replays a revisit whose HTTP status is a 3xx as that
    status with no body, so the page's newest capture would show as an empty 304 instead of
    the stored page it confirmed.  Without the line, a lookup finds that stored page."""
    return capture.is_revisit and capture.status == 304


def compressed_index(lines: list[str]) -> tuple[bytes, str]:
    """(index.cdx.gz, index.idx) for sorted CDXJ `lines`, as cdxj-indexer writes them."""
    blocks = bytearray()
    idx = ["!meta 0 " + json.dumps({"format": "cdxj-gzip-1.0", "filename": INDEX_DATA}) + "\n"]
    for start in range(0, len(lines), INDEX_BLOCK_LINES):
        block = lines[start : start + INDEX_BLOCK_LINES]
        packer = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        data = packer.compress("".join(block).encode("utf-8")) + packer.flush()
        entry = {
            "offset": len(blocks),
            "length": len(data),
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        }
        idx.append(block[0].split(" {", 1)[0] + " " + json.dumps(entry) + "\n")
        blocks += data
    return bytes(blocks), "".join(idx)


def page_text(content: bytes, content_type: str, declared: str | None) -> tuple[str, str]:
    """(title, visible text) of an HTML page, for pages.jsonl."""
    codec, _source = choose_encoding(content, content_type, declared)
    tree = LexborHTMLParser(content.decode(codec, "replace"))
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    body = tree.body
    text = " ".join(body.text(separator=" ").split()) if body is not None else ""
    return title, text[:MAX_TEXT]


def _declared(content_type_header: str | None) -> str | None:
    match = re.search(r"charset\s*=\s*[\"']?([^\s;\"']+)", content_type_header or "", re.IGNORECASE)
    return match.group(1) if match else None


def _rendered_text(warcs: WarcArchive, capture: Capture) -> tuple[str, str] | None:
    """(title, text) of the page as the browser capture rendered it (its ``urn:dom:`` record), if it was.

    A page built by scripts says little in its HTML; ReplayWeb.page searches the text
    pages.jsonl gives, so it gets the rendered text when that says more, as the search index does.
    """
    dom = warcs.lookup(f"urn:dom:{capture.url}", capture.timestamp)
    if dom is None:
        return None
    return page_text(warcs.read(dom).content(), "text/html; charset=utf-8", "utf-8")


def _pages(warcs: WarcArchive, items: list[Item], result: ExportResult) -> list[dict[str, Any]]:
    pages = []
    for item in items:
        ts = item.capture.timestamp
        page: dict[str, Any] = {
            "id": hashlib.sha1(f"{item.url} {ts}".encode()).hexdigest()[:20],
            "url": item.capture.url,
            "ts": _rfc3339(ts),
        }
        try:
            response = warcs.read(item.capture)
            title, text = page_text(
                response.content(), response.content_type, _declared(response.header("Content-Type"))
            )
        except ArchiveError as exc:
            result.errors.append(f"{item.url}: {exc}")
            title, text = "", ""
        try:
            rendered = _rendered_text(warcs, item.capture)
        except ArchiveError as exc:
            result.errors.append(f"{item.url} (rendered): {exc}")
            rendered = None
        if rendered is not None and len(rendered[0]) + len(rendered[1]) > len(title) + len(text):
            title, text = rendered
        if title:
            page["title"] = title
        if text:
            page["text"] = text
        pages.append(page)
    return pages


def export_wacz(archive: FsPath, output: FsPath, options: ExportOptions) -> ExportResult:
    """Pack `archive` as the WACZ file `output`."""
    started = time.monotonic()
    warcs, warnings = open_warcs(archive)
    check_output(output, "wacz")
    result = ExportResult(archive, output, "wacz", warnings=warnings)
    secrets = unredacted_secrets(saved_config(archive)) if (archive / CONFIG_NAME).is_file() else None
    if secrets:
        result.warnings.append(
            f"{archive} was crawled with {secrets}: its request records hold them, and so does"
            " this WACZ (crawl with --redact-credentials to store placeholders)"
        )
    plan = build_plan(warcs, options.timestamp)
    result.errors.extend(plan.errors)
    by_file: dict[str, list[Capture]] = {}
    for capture in warcs.iter_captures():
        by_file.setdefault(capture.filename, []).append(capture)
    html_items = [i for i in plan.items.values() if i.mime in HTML_TYPES and not i.is_redirect]
    starts = start_pages(archive, plan)
    rank = {url: n for n, url in enumerate(starts)}
    html_items.sort(key=lambda i: (rank.get(i.url, len(rank)), i.url))
    newest = max((c.timestamp for c in warcs.iter_captures()), default="")
    partial = output.with_name(output.name + ".partial")
    try:
        package = _Package(partial, mtime_of(newest))
    except OSError as exc:
        raise ArchiveError(f"cannot write {output}: {exc.strerror or exc}") from None
    try:
        lines: list[str] = []
        for path in warcs.warc_files():
            name = path.name[: -len(_OPEN)] if path.name.endswith(_OPEN) else path.name
            captures = by_file.get(path.name, [])
            tail = check_tail(path, captures)
            package.copy(f"archive/{name}", path, tail.good_end)
            lines.extend(
                dataclasses.replace(c, filename=name).to_cdxj() + "\n"
                for c in captures
                if c.offset + c.length <= tail.good_end and not _not_modified(c)
            )
        lines.sort()
        blocks, idx = compressed_index(lines)
        package.add(f"indexes/{INDEX_DATA}", blocks, stored=True)
        package.add("indexes/index.idx", idx.encode("utf-8"))
        pages = _pages(warcs, html_items, result)
        header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages", "hasText": True}
        jsonl = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in [header, *pages])
        package.add("pages/pages.jsonl", jsonl.encode("utf-8"))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        descriptor: dict[str, Any] = {
            "profile": "data-package",
            "wacz_version": WACZ_VERSION,
            "title": f"Archive {archive.resolve().name}",
            "created": now,
            "modified": now,
            "software": f"archiver {__version__}",
        }
        if pages:
            descriptor["mainPageUrl"] = pages[0]["url"]
            descriptor["mainPageDate"] = pages[0]["ts"]
        descriptor["resources"] = package.resources
        data = json.dumps(descriptor, indent=2, ensure_ascii=False).encode("utf-8")
        digest = package.add("datapackage.json", data, listed=False)
        package.add(
            "datapackage-digest.json",
            json.dumps({"path": "datapackage.json", "hash": digest}, indent=2).encode("utf-8"),
            listed=False,
        )
        package.zip.close()
        partial.replace(output)
    except BaseException:
        package.zip.close()
        partial.unlink(missing_ok=True)
        raise
    result.files = len(package.resources) + 2
    result.written = result.files
    result.bytes = output.stat().st_size
    result.seconds = time.monotonic() - started
    return result
