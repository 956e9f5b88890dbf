"""What QA found for one replayed page, and what it found for a whole run.

Shared by the checker (which fills them), the result files (which keep them as JSON
lines), the command line and the web view (which read them back).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

ASKERS = ("html", "css", "script", "other")
"""Who asked for a resource: the page's HTML, a stylesheet, a script, or the browser itself."""
MAX_REQUESTS_KEPT = 2000
"""Requests of one page written to the results; a page making more is noted, not kept whole."""


@dataclass(frozen=True, slots=True)
class Request:
    """One request the replayed page made, in terms of the archived URL it stands for."""

    url: str
    type: str
    """Chromium's resource type: document, stylesheet, image, font, script, fetch, xhr, ..."""
    by: str
    """One of `ASKERS`."""
    status: int | None = None
    """The archived response's status; for a URL not archived, the replay server's answer
    (None when the request failed or was aborted)."""
    archived: bool = True
    """Whether the archive holds the URL; False is a missing resource."""
    live: bool = False
    """Aimed past the replay server (at the live web): aborted, never sent."""
    archive_has: bool | None = None
    """For a URL not answered (missing, or blocked on its way to the live web): whether the archive
    holds it after all (a rewriting gap, or a mirror lacking what the archive has)."""
    outside: bool = False
    """Sent to the replay server outside its replay paths (a script's root-relative URL, such as
    ``/data.json``): the replay cannot answer it, even when the archive holds the URL."""

    @property
    def gone(self) -> bool:
        """Archived, as an error: the site answered 404 (or another 4xx or 5xx) when it was fetched."""
        return self.archived and not self.live and self.status is not None and self.status >= 400

    @property
    def host(self) -> str:
        try:
            return urlsplit(self.url).netloc.lower() or "-"
        except ValueError:
            return "-"


@dataclass
class PageResult:
    """QA of one archived page: what its replay asked for and how close it came to its capture."""

    url: str
    timestamp: str
    requests: list[Request] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    screenshot_score: float | None = None
    """Share of matching pixels between capture and replay screenshots (see docs/qa.md), 0-1."""
    text_score: float | None = None
    """Similarity of the visible text of capture and replay (see docs/qa.md), 0-1."""
    notes: list[str] = field(default_factory=list)
    replay_screenshot: str | None = None
    """File of the replay's screenshot under ``ARCHIVE/qa/`` (kept when it differs from the capture's)."""
    requests_seen: int = 0
    seconds: float = 0.0

    @property
    def missing(self) -> list[Request]:
        return [r for r in self.requests if not r.archived and not r.live]

    @property
    def live(self) -> list[Request]:
        return [r for r in self.requests if r.live]

    @property
    def outside(self) -> list[Request]:
        return [r for r in self.requests if r.outside and r.archived]

    @property
    def complete(self) -> bool:
        """Nothing the page asked for is lacking, and the replay loaded."""
        failed = any(n.startswith("not loaded") for n in self.notes)
        return not (self.missing or self.live or self.outside or failed)

    @property
    def badness(self) -> tuple[int, float, str]:
        """Sort key: worst pages first (most missing, then lowest score)."""
        scores = [s for s in (self.screenshot_score, self.text_score) if s is not None]
        lacking = len(self.missing) + len(self.live) + len(self.outside)
        return (-lacking, min(scores, default=1.0), self.url)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["requests"] = [asdict(r) for r in self.requests[:MAX_REQUESTS_KEPT]]
        data["complete"] = self.complete
        data["missing"] = len(self.missing)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageResult:
        known = {name for name in Request.__dataclass_fields__}
        requests = [Request(**{k: v for k, v in r.items() if k in known}) for r in data.get("requests", [])]
        return cls(
            url=str(data["url"]),
            timestamp=str(data.get("timestamp", "")),
            requests=requests,
            console_errors=list(data.get("console_errors", [])),
            screenshot_score=data.get("screenshot_score"),
            text_score=data.get("text_score"),
            notes=list(data.get("notes", [])),
            replay_screenshot=data.get("replay_screenshot"),
            requests_seen=int(data.get("requests_seen", len(requests))),
            seconds=float(data.get("seconds", 0.0)),
        )
