"""How the web UI names and links the browser capture's records of a page (see rendered_view)."""

from __future__ import annotations

from ..markup.snapshot import DOM_PREFIX, SCREENSHOT_PREFIX
from .library import Found

KINDS = {"dom": DOM_PREFIX, "screenshot": SCREENSHOT_PREFIX}
LABELS = {"dom": "rendered page", "screenshot": "screenshot"}


def kind_of(found: Found) -> str:
    """``dom`` or ``screenshot``: which record of the browser capture `found` is."""
    return "dom" if found.capture.url.startswith(DOM_PREFIX) else "screenshot"


def rendered_path(found: Found) -> str:
    """Where the captures page links a record of the browser capture."""
    kind = kind_of(found)
    return f"/rendered/{kind}/{found.capture.timestamp}/{found.capture.url.removeprefix(KINDS[kind])}"
