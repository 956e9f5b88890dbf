"""QA of an exported folder (``archiver export ARCHIVE DIR``): its pages opened from file://.

The export's manifest (``DIR/.archiver-export.json``) says which URL each file holds.  Each
archived page the mirror has a file for is opened from disk in Chromium; a file it asks for
that the mirror lacks, and a URL it still aims at the web (a link the export left absolute,
or one a script builds), is named, with whether the archive holds it: what the mirror lacks
that the archive has.  Requests for the web are aborted before they are sent, as in QA of
the replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

from archiver.api import UsageError, canonical_key

from ..mirror.sinks import MANIFEST_NAME
from ..replay.library import Library
from .checker import PageToCheck

MAX_MANIFEST_BYTES = 1 << 30


class ExportSite:
    """An exported folder as the place QA loads pages from."""

    def __init__(self, folder: Path, library: Library) -> None:
        self.folder = folder.resolve()
        self.library = library
        self.origin = self.folder.as_uri()
        manifest = self.folder / MANIFEST_NAME
        try:
            data = json.loads(manifest.read_bytes()[:MAX_MANIFEST_BYTES])
            files = data["files"]
        except (OSError, ValueError, KeyError, TypeError):
            raise UsageError(
                f"{folder} is not a folder written by archiver export (no {MANIFEST_NAME})"
            ) from None
        self.paths: dict[str, str] = {}
        self.urls: dict[str, str] = {}
        self.hosts: dict[str, str] = {}
        for path, entry in files.items():
            url = entry.get("url") if isinstance(entry, dict) else None
            if not isinstance(url, str) or not isinstance(path, str):
                continue
            self.paths.setdefault(canonical_key(url), path)
            self.urls[path] = url
            parts = urlsplit(url)
            self.hosts.setdefault(path.split("/", 1)[0], f"{parts.scheme}://{parts.netloc}")

    @property
    def bypass(self) -> str:
        return ""

    def has_page(self, url: str) -> bool:
        return canonical_key(url) in self.paths

    def page_url(self, capture: PageToCheck) -> str:
        path = self.paths.get(canonical_key(capture.url), "")
        return (self.folder / path).as_uri()

    def archived_url(self, url: str) -> str | None:
        """The URL a file of the mirror holds (or would hold, by its folder and name)."""
        if not url.startswith(self.origin + "/"):
            return None
        path = unquote(url[len(self.origin) + 1 :].split("?", 1)[0].split("#", 1)[0])
        if path in self.urls:
            return self.urls[path]
        host, _, rest = path.partition("/")
        origin = self.hosts.get(host)
        return f"{origin}/{rest}" if origin is not None else None

    def holds(self, url: str, timestamp: str, status: int | None) -> tuple[bool, int | None]:
        """A file the page could not load counts as lacking, even when it is there: a browser
        refuses a script's ``fetch()`` of a file:// URL."""
        return canonical_key(url) in self.paths and status is not None, status

    def in_archive(self, url: str) -> bool:
        return self.library.is_archived(url)
