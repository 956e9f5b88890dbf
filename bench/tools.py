"""The crawlers the benchmark runs: the command line of each, and the URLs each fetched.

Every crawler gets the same site and the same budget: no robots.txt, no delay, the same
concurrency (wget has none: it uses one connection). Each returns {URL: status} for every HTTP
exchange it made, read from its own log, so the URL sets can be compared.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
SCRAPY_VENV = Path.home() / ".cache" / "archiver-bench" / "scrapy-venv"
ARCHIVER_PLUGINS = {
    "archiver-links": ("warc", "index", "sitemap"),
    "archiver-warc": ("index", "sitemap"),
    "archiver": ("sitemap",),
}


@dataclass(frozen=True)
class Tool:
    name: str
    label: str
    family: str  # archiver | wget | scrapy | floor


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("archiver-links", "archiver, links only", "archiver"),
        Tool("archiver-warc", "archiver, links + WARC", "archiver"),
        Tool("archiver", "archiver, links + WARC + index (default)", "archiver"),
        Tool("wget", "wget --mirror", "wget"),
        Tool("wget-warc", "wget --mirror --warc-file", "wget"),
        Tool("scrapy", "Scrapy CrawlSpider", "scrapy"),
        Tool("floor", "aiohttp, known URL list, no parsing (limit)", "floor"),
        Tool("floor-links", "aiohttp, known URL list + selectolax links (limit)", "floor"),
    )
}


def archiver_command(
    tool: Tool, root: str, out: Path, concurrency: int, frontier: str = "sqlite"
) -> list[str]:
    return crawl_command(root, out / "archive", concurrency, frontier, ARCHIVER_PLUGINS[tool.name])


def crawl_command(
    root: str, archive: Path, concurrency: int, frontier: str, disabled: tuple[str, ...]
) -> list[str]:
    """`archiver crawl` at full speed on our own server: no delay, no robots, one knob for concurrency."""
    command = [
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        root,
        "-o",
        str(archive),
        "--frontier",
        frontier,
        "--delay",
        "0",
        "--ignore-robots",
        "--max-tasks",
        str(concurrency),
        "--per-host-concurrency",
        str(concurrency),
        "--json",
        "-q",
    ]
    for plugin in disabled:
        command += ["--disable-plugin", plugin]
    return command


def wget_command(tool: Tool, root: str, out: Path) -> list[str]:
    command = [
        shutil.which("wget") or "/usr/bin/wget",
        "--mirror",
        "-e",
        "robots=off",
        "-P",
        str(out / "mirror"),
        "-o",
        str(out / "wget.log"),
    ]
    if tool.name == "wget-warc":
        command.append(f"--warc-file={out / 'crawl'}")
    return [*command, root]


def scrapy_python() -> Path:
    """The Python of a virtual environment with Scrapy, made (once) when missing."""
    python = SCRAPY_VENV / "bin" / "python"
    probe = subprocess.run([python, "-c", "import scrapy"], capture_output=True) if python.exists() else None
    if probe is None or probe.returncode != 0:
        print(f"installing Scrapy into {SCRAPY_VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(SCRAPY_VENV)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "scrapy"], check=True)
    return python


def scrapy_version() -> str:
    python = SCRAPY_VENV / "bin" / "python"
    if not python.exists():
        return ""
    done = subprocess.run(
        [python, "-c", "import scrapy; print(scrapy.__version__)"], capture_output=True, text=True
    )
    return done.stdout.strip()


def scrapy_command(root: str, out: Path, concurrency: int) -> list[str]:
    return [
        str(scrapy_python()),
        str(BENCH / "scrapy_crawl.py"),
        root,
        str(out / "scrapy.json"),
        "--concurrency",
        str(concurrency),
    ]


def floor_command(tool: Tool, urls_file: Path, concurrency: int) -> list[str]:
    command = [sys.executable, "-m", "bench.floor", str(urls_file), "--concurrency", str(concurrency)]
    return [*command, "--links"] if tool.name == "floor-links" else command


def command(tool: Tool, root: str, out: Path, concurrency: int, urls_file: Path) -> list[str]:
    if tool.family == "archiver":
        return archiver_command(tool, root, out, concurrency)
    if tool.family == "wget":
        return wget_command(tool, root, out)
    if tool.family == "scrapy":
        return scrapy_command(root, out, concurrency)
    return floor_command(tool, urls_file, concurrency)


_WGET_REQUEST = re.compile(r"^--\d{4}-\d\d-\d\d \d\d:\d\d:\d\d--  (\S+)$")
_WGET_STATUS = re.compile(r"awaiting response\.\.\. (\d{3})")


def wget_urls(log: Path) -> tuple[dict[str, int | None], int]:
    """{URL: last status} and the number of requests, from wget's default (verbose) log."""
    urls: dict[str, int | None] = {}
    requests = 0
    current: str | None = None
    for line in log.read_text(errors="replace").splitlines():
        match = _WGET_REQUEST.match(line)
        if match:
            current = match.group(1)
            urls.setdefault(current, None)
            requests += 1
            continue
        status = _WGET_STATUS.search(line)
        if status and current is not None:
            urls[current] = int(status.group(1))
    return urls, requests


def archiver_urls(archive: Path) -> tuple[dict[str, int | None], int]:
    """{URL: status} of every exchange in crawl-log.jsonl (skipped URLs are not fetches)."""
    urls: dict[str, int | None] = {}
    requests = 0
    log = archive / "crawl-log.jsonl"
    if not log.exists():
        return urls, 0
    with log.open() as lines:
        for line in lines:
            entry = json.loads(line)
            if entry.get("outcome") == "skipped":
                continue
            urls[entry["url"]] = entry.get("status")
            requests += int(entry.get("tries") or 1)
    return urls, requests


def fetched_urls(tool: Tool, out: Path, result: dict[str, Any]) -> tuple[dict[str, int | None], int]:
    """What the tool fetched, and how many requests it made (with repeats and retries)."""
    if tool.family == "archiver":
        return archiver_urls(out / "archive")
    if tool.family == "wget":
        return wget_urls(out / "wget.log") if (out / "wget.log").exists() else ({}, 0)
    if tool.family == "scrapy":
        path = out / "scrapy.json"
        if not path.exists():
            return {}, 0
        data = json.loads(path.read_text())
        requests = int(data["stats"].get("downloader/request_count", len(data["urls"])))
        return {url: int(status) for url, status in data["urls"].items()}, requests
    pages = int(result.get("pages", 0))
    return {}, pages


def version(tool: Tool) -> str:
    if tool.family == "wget":
        done = subprocess.run(["wget", "--version"], capture_output=True, text=True)
        return done.stdout.splitlines()[0] if done.stdout else ""
    if tool.family == "scrapy":
        return f"Scrapy {scrapy_version()}"
    if tool.family == "archiver":
        from archiver import __version__

        commit = subprocess.run(
            ["git", "-C", str(BENCH.parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return f"archiver {__version__} ({commit})" if commit else f"archiver {__version__}"
    import aiohttp

    return f"aiohttp {aiohttp.__version__}"
