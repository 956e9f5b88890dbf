"""The offline readers' own tools for the ZIM and EPUB tests: zimcheck, kiwix-serve, epubcheck.

A missing tool skips the test on a developer machine and fails it under CI (``CI=true``),
where `.ci/test.sh` installs them (Debian zim-tools, kiwix-tools, epubcheck).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

EPUBCHECK_JAR = Path("/usr/share/java/epubcheck.jar")
START_TIMEOUT = 20.0
RUN_TIMEOUT = 120.0


def require(binary: str, package: str) -> str:
    found = shutil.which(binary)
    if found is None:
        message = f"{binary} is not installed (apt-get install {package})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def zimcheck(zim: Path) -> subprocess.CompletedProcess[str]:
    """`zimcheck -A` (every check: metadata, favicon, main page, internal links, redirects...)."""
    binary = require("zimcheck", "zim-tools")
    return subprocess.run(
        [binary, "-A", str(zim)], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
    )


def epubcheck(epub: Path) -> subprocess.CompletedProcess[str]:
    """epubcheck run through Java (Debian's /usr/bin/epubcheck is the jar itself, which needs binfmt)."""
    java = require("java", "epubcheck")
    if not EPUBCHECK_JAR.exists():
        message = "epubcheck is not installed (apt-get install epubcheck)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return subprocess.run(
        [java, "-jar", str(EPUBCHECK_JAR), str(epub)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def kiwix_serve(zim: Path) -> Iterator[str]:
    """kiwix-serve on 127.0.0.1 serving `zim`; yields its base URL and stops it afterwards."""
    binary = require("kiwix-serve", "kiwix-tools")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--address", "127.0.0.1", "--port", str(port), "--nodatealiases", str(zim)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    _, err = process.communicate(timeout=10)
                    pytest.fail(f"kiwix-serve did not start on port {port}: {err.decode(errors='replace')}")
                time.sleep(0.05)
        yield base
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def get(url: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def files_named(folder: Path, prefix: str) -> list[str]:
    """Names in `folder` starting with `prefix`: an output or its ``.partial`` left behind."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(prefix))
