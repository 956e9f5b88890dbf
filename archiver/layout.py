"""Every name inside an archive folder, spelled once.

An archive is a folder that several programs read while it is written: the crawl, a second
process of a shared crawl, `status`, `serve`, `why`, `qa`, and the user's own `tail -f`.  Each
of them finds a file by its name, so the names are part of the product (the README lists them)
and a name written twice is a name that can drift.  The core writes the files at the top of the
folder; a plugin owns one folder (``warc/``, ``index/``, ``qa/``) and the names inside it, and
its files at the top of the archive are named here too, so `status` and `merge` can recognise
an archive without loading the plugin.
"""

from __future__ import annotations

from pathlib import Path

CONFIG_NAME = "crawl.toml"
"""The effective configuration of the crawl: resume and update read it back."""
STATE_NAME = "state.sqlite"
"""The frontier: the seen set, the queue, each URL's state."""
LOCK_NAME = "crawl.lock"
"""The process id of the crawl writing the archive."""
COOKIES_NAME = "cookies.json"
"""The crawl's cookie jar, readable by its owner only."""
CONTROL_NAME = "control.jsonl"
"""The commands of `archiver control` and their answers."""
ROBOTS_LOG_NAME = "robots.jsonl"
"""Each robots.txt outcome, so `archiver why` can name the deciding line."""
CRAWL_LOG_NAME = "crawl-log.jsonl"
"""One line per URL fetched, failed or skipped."""
REPORT_NAME = "report.json"
"""The last crawl's totals."""
HISTORY_NAME = "crawls.jsonl"
"""Each numbered crawl of the archive and its time span."""

WARC_FOLDER = "warc"
"""The WARC files and their CDXJ indexes (the `warc` plugin writes them, everything reads them)."""
INDEX_FOLDER = "index"
"""The full-text index and its spool (the `index` plugin)."""
QA_FOLDER = "qa"
"""What `archiver qa` found, and a patch's saved settings (the `qa` plugin)."""
DEDUP_NAME = "warc-dedup.sqlite"
"""The payload digests already stored, for revisit records across resumes (the `warc` plugin)."""
UPDATE_NAME = "warc-update.sqlite"
"""During an update only: each URL's latest capture and its validators (the `warc` plugin)."""

CRAWL_FOLDERS = (WARC_FOLDER, INDEX_FOLDER)
"""The folders whose presence marks a crawl's output even where its `crawl.toml` is gone."""


def warc_folder(path: Path) -> Path:
    """The folder of WARC files of an archive, or `path` itself when it is such a folder."""
    folder = path / WARC_FOLDER
    return folder if folder.is_dir() else path
