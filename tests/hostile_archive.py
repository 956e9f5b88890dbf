"""Hostile WARC files built at test time: decompression bombs, malformed records, run bounded.

A bomb is small on disk and made in about a second: after a full flush, zlib compresses
the same input to the same bytes, so one compressed MiB of zeros is repeated and the
gzip trailer (CRC-32 and length) is computed for the whole.  Commands run as
subprocesses under an address-space and CPU limit, so a reader that inflates a bomb
fails the test instead of taking the machine; their peak RSS comes from ``wait4``.
"""

from __future__ import annotations

import io
import os
import resource
import struct
import subprocess
import sys
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

MIB = 1 << 20
_ZEROS = bytes(MIB)
ADDRESS_SPACE = 2 << 30
CPU_SECONDS = 60
WALL_SECONDS = 90.0


def zeros_gzip(prefix: bytes, mib: int, suffix: bytes = b"") -> bytes:
    """One gzip member holding `prefix`, `mib` MiB of zeros and `suffix`."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.compress(suffix) + compressor.flush()
    crc = zlib.crc32(prefix)
    for _ in range(mib):
        crc = zlib.crc32(_ZEROS, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + mib * MIB + len(suffix)
    return head + block * mib + end[:-8] + struct.pack("<II", crc, size & 0xFFFFFFFF)


def record_bomb(url: str, mib: int) -> bytes:
    """A WARC response record (one gzip member) whose body is `mib` MiB of zeros."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    header = (
        "WARC/1.0\r\nWARC-Type: response\r\n"
        "WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        f"WARC-Date: 2024-01-02T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(http) + mib * MIB}\r\n\r\n"
    ).encode()
    return zeros_gzip(header + http, mib, b"\r\n\r\n")


def write_warc(path: Path, records: list[tuple[str, bytes, list[tuple[str, str]]]], date: str = "") -> None:
    """Response records written by warcio (the reference writer), one gzip member each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for url, body, headers in records:
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http
            )
            if date:
                record.rec_headers.replace_header("WARC-Date", date)
            writer.write_record(record)


@dataclass
class Ran:
    code: int
    out: str
    err: str
    peak_mb: float


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def run_archiver(*args: str | Path, cwd: Path) -> Ran:
    """`archiver ARGS` in a bounded child process; its exit code, output and peak RSS."""
    out_path, err_path = cwd / ".child.out", cwd / ".child.err"
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "PYTHONUNBUFFERED": "1"}
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "archiver", *map(str, args)],
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            preexec_fn=_limits,
        )
        timer = threading.Timer(WALL_SECONDS, process.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    return Ran(
        process.returncode,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
        usage.ru_maxrss / 1024,
    )
