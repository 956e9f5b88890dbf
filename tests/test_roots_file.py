"""`archiver crawl -i FILE`: roots read from a file or standard input, as wget's `-i`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from many_hosts import many_hosts

from archiver.testing import Site

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
TOLERANCE = 0.05


async def archiver(*args: str, stdin: str | None = None, cwd: Path | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        env=ENV,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), 120)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_many_roots_from_stdin_start_at_once_without_a_burst_to_one_host(tmp_path: Path) -> None:
    async with many_hosts(40) as server:
        lines = ["# every host's home page and three of its pages, host by host"]
        for host in server.hosts:
            host.pages = 4
            lines += [host.url(path) for path in ("/", "/p1", "/p2", "/p3")]
            lines.append("")
        code, err = await archiver(
            "crawl",
            "-i",
            "-",
            "-o",
            str(tmp_path / "a"),
            "--delay",
            "0.3",
            "--ignore-robots",
            "--plugin",
            "archiver_plugins.links",
            "-q",
            stdin="\n".join(lines),
        )
    assert code == 0, err
    firsts = sorted(min(host.arrivals) for host in server.hosts)
    for host in server.hosts:
        assert sum(host.paths.values()) == 4, host.paths
        assert min(host.gaps()) >= 0.3 - server.slack(TOLERANCE), (host.address, min(host.gaps()))
    # 40 hosts, 10 workers: every host's first request goes out in the first round of turns,
    # not after the queue of the hosts listed before it
    assert firsts[-1] - firsts[0] < 0.3 * 4, firsts[-1] - firsts[0]


async def test_every_bad_line_is_an_error_line_of_its_own(tmp_path: Path) -> None:
    roots = tmp_path / "roots.txt"
    roots.write_text(
        "# two sites\nhttp://127.0.0.1:9/   # the first\n\nftp://files.example/\n"
        "http://a.example/ http://b.example/\nhttp://ok.example/#top\nnot a url\n"
    )
    code, err = await archiver("crawl", "-i", str(roots), "-o", str(tmp_path / "a"), cwd=tmp_path)
    assert code == 2
    assert err.splitlines() == [
        f"archiver: error: {roots}:4: 'ftp://files.example/' is not an http(s) URL",
        f"archiver: error: {roots}:5: 'http://a.example/ http://b.example/' holds a space: one URL a line",
        f"archiver: error: {roots}:7: 'not a url' holds a space: one URL a line",
    ]
    assert not (tmp_path / "a").exists()
    code, err = await archiver("crawl", "-i", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "a"))
    assert code == 2 and err.startswith("archiver: error: --roots-file: cannot read") and "missing.txt" in err
    code, err = await archiver("crawl", "-i", "-", "-o", str(tmp_path / "a"), stdin="# nothing\n\n")
    assert code == 2 and err.strip() == "archiver: error: --roots-file: standard input holds no URL"


async def test_a_comment_after_a_url_is_no_part_of_it(site: Site, tmp_path: Path) -> None:
    site.page("/", "<p>home</p>")
    roots = tmp_path / "roots.txt"
    roots.write_text(
        f"{site.url('/')}   # the home page\n{site.url('/#top')}\t# again, its fragment dropped\n"
    )
    args = ["crawl", "-i", str(roots), "-o", str(tmp_path / "a"), "--ignore-robots", "-q"]
    code, err = await archiver(*args, "--plugin", "archiver_plugins.links")
    assert code == 0, err
    assert site.hits == {"/": 1}
