"""The benchmark's nginx: it serves every file of a site larger than its descriptor limit.

nginx keeps the files it serves open in `open_file_cache`; a cache allowed more entries than
the worker may hold descriptors makes `open()` fail with EMFILE, which `try_files` answers
with 404, and a crawler then looks as if it had missed what the 404 pages link to.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import run, server

REPO = Path(__file__).resolve().parent.parent
FILES = 1500
DESCRIPTORS = 512
"""The hard and soft limit of the process that starts nginx, far below FILES."""

_LIMITED_SERVER = (
    "import resource, signal, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it\n"
    "from bench.server import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_a_site_with_more_files_than_descriptors_is_served_whole(tmp_path: Path) -> None:
    try:
        server.ensure_nginx()
    except server.ServerError as exc:
        pytest.skip(str(exc))
    root = tmp_path / "site"
    for n in range(FILES):
        folder = root / f"d{n % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"page-{n}.html").write_text(f"<p>page {n}</p>\n")
    statuses: dict[int, int] = {}
    not_found: list[int] = []
    with subprocess.Popen(
        [sys.executable, "-c", _LIMITED_SERVER.format(limit=DESCRIPTORS), str(root)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            url = child.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), f"server did not start: {url!r}"
            port = int(url.rsplit(":", 1)[1].strip("/"))
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for n in range(FILES):
                connection.request("GET", f"/d{n % 10}/page-{n}.html")
                response = connection.getresponse()
                response.read()
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.status != 200:
                    not_found.append(n)
            connection.close()
        finally:
            child.send_signal(signal.SIGINT)
            child.wait(15)
    assert statuses == {200: FILES}, f"first failures: {not_found[:5]}"


def test_the_url_check_tells_a_server_error_from_a_missed_url() -> None:
    origin = "http://127.0.0.1:8000"
    expected = {
        "urls": {
            "/": {"status": 200},
            "/a.html": {"status": 200},
            "/old/1.html": {"status": 301},
            "/a.html?view=print": {"status": 200},
        },
        "css_only": [],
    }
    fetched: dict[str, int | None] = {origin + "/": 200, origin + "/a.html": 404, origin + "/old/1.html": 301}
    check = run.compare(fetched, expected, origin)
    assert (check["missing"], check["extra"], check["wrong_status"]) == (1, 0, 1)
    assert check["wrong_status_examples"] == ["/a.html 200 -> 404"]
    row = {"tool": "x", "label": "x", "ok": True, "check": check, "pages": 3, "wall_seconds": 1.0}
    row |= {"pages_per_second": 3.0, "cpu_seconds_per_1000_pages": 1.0, "peak_rss_mb": 1}
    assert "-1 1 with another status" in run.markdown_table([row])


def test_nginx_errors_are_picked_from_its_log() -> None:
    text = (
        "2026/11/22 02:08:00 [warn] 1#1: could not build optimal map_hash\n"
        '2026/11/22 02:05:27 [crit] 2#2: *37 open() "/s/a.html" failed (24: Too many open files)\n'
    )
    assert run.server_error_lines(text) == [text.splitlines()[1]]
