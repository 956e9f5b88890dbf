"""Pages written as a crawl leaves them: WARC response records and their sorted CDXJ file,
so a search reads its snippets' text from the records."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path

from archiver_plugins.archive_reader.cdxj import cdxj_path_for, index_warc, write_cdxj
from archiver_plugins.index.store import Capture
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def write_warc(archive: Path, captures: Iterable[Capture], name: str = "pages-00000.warc.gz") -> Path:
    """Write `captures` as response records into ``ARCHIVE/warc/NAME`` with its CDXJ file."""
    folder = archive / "warc"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for capture in captures:
            charset = f"; charset={capture.encoding}" if capture.encoding else ""
            fields = [
                ("Content-Type", capture.content_type + charset),
                ("Content-Length", str(len(capture.content))),
            ]
            headers = StatusAndHeaders(f"{capture.status} OK", fields, protocol="HTTP/1.1")
            when = datetime.strptime(capture.time, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
            record = writer.create_warc_record(
                capture.url,
                "response",
                payload=BytesIO(capture.content),
                length=len(capture.content),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": when.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
            writer.write_record(record)
    write_cdxj(cdxj_path_for(path), index_warc(path))
    return path
