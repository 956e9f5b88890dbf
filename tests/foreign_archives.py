"""Archives as other tools write them: built byte by byte in the layouts those tools use,
and a few sample files warcio ships (`SHIPPED`).

Each builder writes one file the way a crawler or library does (Heritrix's metadata
records, wget 1.14's chunked bodies, gowarc's chunked + gzip, a Webrecorder capture of a
decoded body, py-wacz's ``sha-256:`` digests, a WARC gzipped as one stream, ARC files,
a WACZ) and says which word a search must find there.  The records are written by hand,
not through warcio's writer, because the point is bytes warcio's writer would never make.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import uuid
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HTML_HEAD = "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"


def page(title: str, words: str, links: Sequence[str] = ()) -> bytes:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    head = f"<!doctype html><html><head><title>{title}</title></head>"
    return f"{head}<body><p>{words}</p>{anchors}</body></html>".encode()


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def record(
    kind: str,
    uri: str,
    date: str,
    block: bytes,
    *,
    content_type: str = "application/http; msgtype=response",
    fields: Sequence[tuple[str, str]] = (),
    version: str = "WARC/1.0",
    extra_lines: bytes = b"",
) -> bytes:
    """One WARC record, serialized as given (no digest added unless in `fields`)."""
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{kind} {uri} {date} {len(block)}")
    head = [
        version,
        f"WARC-Type: {kind}",
        f"WARC-Record-ID: <urn:uuid:{record_id}>",
        f"WARC-Date: {date}",
    ]
    if uri:
        head.append(f"WARC-Target-URI: {uri}")
    head += [f"{name}: {value}" for name, value in fields]
    head += [f"Content-Type: {content_type}", f"Content-Length: {len(block)}"]
    return ("\r\n".join(head) + "\r\n").encode() + extra_lines + b"\r\n" + block + b"\r\n\r\n"


def response(uri: str, date: str, head: str, body: bytes, digest: str | None = None) -> bytes:
    fields = [("WARC-Payload-Digest", digest)] if digest else []
    return record("response", uri, date, head.encode() + b"\r\n" + body, fields=fields)


def per_record(records: Sequence[bytes]) -> bytes:
    return b"".join(gzip.compress(r, mtime=0) for r in records)


def chunked(body: bytes, size: int = 40) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@dataclass(frozen=True)
class Sample:
    """One file of the corpus: its name, how to write it, a word a search must find."""

    name: str
    write: Callable[[Path], None]
    word: str
    missing: tuple[str, ...] = ()
    """URLs whose replay must say what is missing (503): revisits of absent originals."""
    valid: bool = True
    """Whether the file keeps the letter of the format (`warc check` passes): readers are
    lenient with a few things the strict check names."""


# -- the files ---------------------------------------------------------------------


def heritrix(path: Path) -> None:
    """Heritrix 1.x: response, request and a ``text/anvl`` metadata record per URL, same second."""
    logo = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4
    records = [
        record(
            "warcinfo",
            "",
            "2008-04-30T20:48:25Z",
            b"software: Heritrix/1.14.0\r\n",
            content_type="application/warc-fields",
        ),
    ]
    for uri, head, body in (
        (
            "http://www.archive.org/",
            HTML_HEAD,
            page("Internet Archive", "wayback heritrix", ["/images/logoc.jpg"]),
        ),
        ("http://www.archive.org/images/logoc.jpg", "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n", logo),
    ):
        date = "2008-04-30T20:48:29Z"
        records.append(response(uri, date, head, body, sha1_b32(body)))
        records.append(
            record(
                "request",
                uri,
                date,
                b"GET / HTTP/1.0\r\nUser-Agent: heritrix\r\n\r\n",
                content_type="application/http; msgtype=request",
            )
        )
        records.append(
            record(
                "metadata",
                uri,
                date,
                b"via: http://www.archive.org/\r\nhopsFromSeed: E\r\nfetchTimeMs: 12\r\n",
                content_type="text/anvl",
            )
        )
    path.write_bytes(per_record(records))


def wget_chunked(path: Path) -> None:
    """wget 1.14 / warcat: the body stored with its chunked framing, uncompressed file."""
    body = page("Chunked", "sandpiper chunked framing kept")
    head = HTML_HEAD + "Transfer-Encoding: chunked\r\n"
    stored = chunked(body)
    path.write_bytes(
        record(
            "warcinfo",
            "",
            "2014-01-01T00:00:00Z",
            b"software: Wget/1.14\r\n",
            content_type="application/warc-fields",
        )
        + response("http://chunked.test/", "2014-01-01T00:00:01Z", head, stored, sha1_b32(stored))
    )


def gowarc_chunked_gzip(path: Path) -> None:
    """gowarc: chunked transfer coding over a gzip body."""
    body = page("Chunked gzip", "kittiwake gzip inside chunks")
    encoded = gzip.compress(body, mtime=0)
    head = HTML_HEAD + "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
    stored = chunked(encoded, 25)
    path.write_bytes(
        per_record([response("http://gowarc.test/", "2023-03-01T00:00:00Z", head, stored, sha1_b32(stored))])
    )


def webrecorder_decoded(path: Path) -> None:
    """A browser-based capture: body stored decoded under its ``Content-Encoding: gzip`` header."""
    body = page("Decoded", "guillemot stored decoded")
    head = HTML_HEAD + "Content-Encoding: gzip\r\n"
    path.write_bytes(
        per_record([response("http://webrecorder.test/", "2021-06-01T00:00:00Z", head, body, sha1_b32(body))])
    )


def sha256_revisits(path: Path) -> None:
    """py-wacz style: ``sha-256:`` and ``sha256:`` digests, hex and base32, revisits by digest."""
    body = page("Digests", "cormorant sha256 original")
    raw = hashlib.sha256(body).digest()
    records = [
        response("http://digest.test/", "2022-01-01T00:00:00Z", HTML_HEAD, body, "sha-256:" + raw.hex())
    ]
    spellings = [
        "sha256:" + base64.b32encode(raw).decode(),
        "SHA-256:" + raw.hex().upper(),
        "sha-256:" + base64.b32encode(raw).decode().lower(),
    ]
    for number, digest in enumerate(spellings, 1):
        records.append(
            record(
                "revisit",
                f"http://digest.test/again{number}",
                f"2022-01-0{number + 1}T00:00:00Z",
                HTML_HEAD.encode() + b"\r\n",
                fields=[
                    ("WARC-Payload-Digest", digest),
                    ("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"),
                    ("WARC-Refers-To-Target-URI", "http://digest.test/"),
                ],
            )
        )
    path.write_bytes(per_record(records))


def one_stream(path: Path) -> None:
    """A WARC gzipped whole (``gzip file.warc``), ten pages."""
    records = [
        response(
            f"http://stream.test/{n}",
            f"2020-01-01T00:00:{n:02d}Z",
            HTML_HEAD,
            page(f"Page {n}", f"puffin number{n}"),
        )
        for n in range(10)
    ]
    path.write_bytes(gzip.compress(b"".join(records), mtime=0))


def arc_record(url: str, ip: str, date: str, mime: str, block: bytes) -> bytes:
    return f"{url} {ip} {date} {mime} {len(block)}\n".encode() + block + b"\n"


def arc_records(name: str) -> list[bytes]:
    version = b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
    body = page("Old web", "albatross from the arc era", ["/gone.html"])
    image = b"GIF89a" + bytes(range(64))
    redirect = "HTTP/1.0 302 Found\r\nLocation: http://old.test/gone.html\r\nContent-Length: 0\r\n\r\n"
    return [
        arc_record(f"filedesc://{name}", "0.0.0.0", "20010101000000", "text/plain", version),
        arc_record(
            "http://old.test/",
            "10.0.0.1",
            "20010101000001",
            "text/html",
            f"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body,
        ),
        arc_record(
            "http://old.test/logo.gif",
            "10.0.0.1",
            "20010101000002",
            "image/gif",
            f"HTTP/1.0 200 OK\r\nContent-Type: image/gif\r\nContent-Length: {len(image)}\r\n\r\n".encode()
            + image,
        ),
        arc_record("http://old.test/moved", "10.0.0.1", "20010101000003", "text/html", redirect.encode()),
    ]


def arc_plain(path: Path) -> None:
    path.write_bytes(b"".join(arc_records(path.name)))


def arc_gzip(path: Path) -> None:
    path.write_bytes(per_record(arc_records(path.name)))


def odd_records(path: Path) -> None:
    """Legal but unusual: lowercase ``warc/1.0``, a header continuation line, a resource
    record typed text/html, a revisit whose original is elsewhere, a redirect whose target
    was never archived."""
    resource = page("Resource", "petrel resource record")
    redirect = "HTTP/1.1 301 Moved Permanently\r\nLocation: http://live-only.test/\r\nContent-Length: 0\r\n"
    lower = page("Lowercase", "shearwater lowercase version")
    path.write_bytes(
        per_record(
            [
                record(
                    "response",
                    "http://odd.test/lower",
                    "2019-05-05T00:00:00Z",
                    HTML_HEAD.encode() + b"\r\n" + lower,
                    version="warc/1.0",
                    extra_lines=b"X-Note: a header\r\n  continued on the next line\r\n",
                ),
                record(
                    "resource",
                    "http://odd.test/resource.html",
                    "2019-05-05T00:00:01Z",
                    resource,
                    content_type="text/html; charset=utf-8",
                ),
                record(
                    "revisit",
                    "http://odd.test/revisit",
                    "2019-05-05T00:00:02Z",
                    HTML_HEAD.encode() + b"\r\n",
                    fields=[
                        ("WARC-Payload-Digest", sha1_b32(b"elsewhere")),
                        ("WARC-Refers-To-Target-URI", "http://odd.test/elsewhere"),
                    ],
                ),
                response(
                    "http://odd.test/",
                    "2019-05-05T00:00:03Z",
                    HTML_HEAD,
                    page("Odd", "odd records", ["/moved"]),
                ),
                response("http://odd.test/moved", "2019-05-05T00:00:04Z", redirect, b""),
            ]
        )
    )


def loose_endings(path: Path) -> None:
    """Uncompressed, as hand-edited and older files are: lines ended CR CR LF, a record
    followed by one line break instead of two, one whose Content-Length is two bytes short."""
    first = page("Loose", "dunlin loose endings")
    second = page("Short", "plover short length")
    crcr = response("http://loose.test/", "2015-01-01T00:00:00Z", HTML_HEAD, first).replace(
        b"\r\n", b"\r\r\n"
    )
    head, _, rest = crcr.partition(b"\r\r\n\r\r\n")  # the WARC header block: its own line ends
    block = rest[: -len(b"\r\r\n\r\r\n")].replace(b"\r\r\n", b"\r\n")
    length = b"Content-Length: %d" % len(block)
    head = head.replace(b"Content-Length: %d" % len(rest[:-6]), length)
    short = response("http://loose.test/short", "2015-01-01T00:00:02Z", HTML_HEAD, second)
    stated = int(short.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    short = short.replace(b"Content-Length: %d" % stated, b"Content-Length: %d" % (stated - 2))
    once = response("http://loose.test/once", "2015-01-01T00:00:01Z", HTML_HEAD, page("Once", "one break"))
    path.write_bytes(head + b"\r\r\n\r\r\n" + block + b"\r\n\r\n" + once[:-2] + short)


def wacz(path: Path) -> None:
    """A WACZ as py-wacz and Browsertrix write it: WARCs stored, CDXJ index, pages.jsonl, datapackage."""
    body = page("Packed", "gannet inside a wacz")
    other = page("Second", "fulmar second page")
    warc = per_record(
        [
            response("https://wacz.test/", "2024-02-02T00:00:00Z", HTML_HEAD, body, sha1_b32(body)),
            response("https://wacz.test/second", "2024-02-02T00:00:01Z", HTML_HEAD, other, sha1_b32(other)),
        ]
    )
    pages = [
        {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"},
        {"id": "1", "url": "https://wacz.test/", "title": "Packed", "ts": "2024-02-02T00:00:00Z"},
    ]
    cdxj = (
        'test,wacz)/ 20240202000000 {"url": "https://wacz.test/", "mime": "text/html", "status": "200",'
        f' "offset": "0", "length": "{len(gzip.compress(b""))}", "filename": "data.warc.gz"}}\n'
    )
    with zipfile.ZipFile(path, "w") as out:
        out.writestr(zipfile.ZipInfo("archive/data.warc.gz"), warc, compress_type=zipfile.ZIP_STORED)
        out.writestr("indexes/index.cdxj", cdxj)
        out.writestr("pages/pages.jsonl", "\n".join(json.dumps(p) for p in pages) + "\n")
        out.writestr(
            "datapackage.json",
            json.dumps({"profile": "data-package", "wacz_version": "1.1.1", "resources": []}),
        )


SAMPLES = (
    Sample("heritrix.warc.gz", heritrix, "wayback"),
    Sample("wget-chunked.warc", wget_chunked, "sandpiper"),
    Sample("gowarc-chunked-gzip.warc.gz", gowarc_chunked_gzip, "kittiwake"),
    Sample("webrecorder-decoded.warc.gz", webrecorder_decoded, "guillemot"),
    Sample("pywacz-sha256.warc.gz", sha256_revisits, "cormorant"),
    Sample("one-stream.warc.gz", one_stream, "number9"),
    Sample("arc-named-warc.warc.gz", arc_gzip, "albatross"),
    Sample("old.arc", arc_plain, "albatross"),
    Sample("old.arc.gz", arc_gzip, "albatross"),
    Sample("odd-records.warc.gz", odd_records, "shearwater", missing=("http://odd.test/revisit",)),
    Sample("loose-endings.warc", loose_endings, "dunlin", valid=False),
    Sample("browsertrix.wacz", wacz, "gannet"),
)


def warc_members_of(path: Path) -> list[bytes]:
    """The WARC files inside `path` (the file itself, or a WACZ's archive/ files), as bytes."""
    if path.name.endswith(".wacz"):
        with zipfile.ZipFile(path) as packed:
            return [packed.read(n) for n in packed.namelist() if n.startswith("archive/")]
    return [path.read_bytes()]


FOREIGN = Path(__file__).parent / "data" / "foreign"
"""Sample files the public libraries ship (see the NOTICE there)."""


def copy_of(name: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes((FOREIGN / name).read_bytes())

    return write


SHIPPED = (
    Sample("example.arc", copy_of("example.arc"), "illustrative"),
    Sample("example.arc.gz", copy_of("example.arc.gz"), "illustrative"),
    Sample("example-iana.org-chunked.warc", copy_of("example-iana.org-chunked.warc"), "assigned"),
    Sample("example-resource.warc.gz", copy_of("example-resource.warc.gz"), "illustrative"),
    # its revisit's WARC-Block-Digest is not that of its block: `warc check` names it
    Sample(
        "example-bad-non-chunked.warc.gz",
        copy_of("example-bad-non-chunked.warc.gz"),
        "illustrative",
        valid=False,
    ),
)
"""warcio's own samples: ARC files, a body stored chunked, a resource record, one gzip stream."""
