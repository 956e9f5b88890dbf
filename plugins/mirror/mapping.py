"""The contract between the rewriters and the export: what a link becomes.

The shared rewriter (`archiver_plugins.markup.rewrite`) finds where links are written and
never decides what they point at; the export passes a `LinkMap` that knows the exported files.  Keeping the
two apart lets the rewriters be tested on strings alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

PAGE = "page"
REQUISITE = "requisite"
IMPORT = "import"


@dataclass(frozen=True, slots=True)
class Mapped:
    """What to write instead of a link: `value` None means leave the text as it is.

    `missing` is True when the link stays pointing at the web (not in the archive).
    """

    value: str | None
    missing: bool = False
    target: str | None = None
    """The absolute URL the link resolves to (for a missing link's title)."""
    reason: str | None = None
    """Why a missing link is missing ('not archived', 'HTTP 404 when crawled'...)."""


UNCHANGED = Mapped(None)


class LinkMap(Protocol):
    def __call__(self, raw: str, base: str, kind: str) -> Mapped:
        """The replacement for a link written `raw` in a document whose base URL is `base`."""
        ...
