"""The ``[plugins.links]`` table, checked by the core (`archiver.settings`)."""

from __future__ import annotations

from dataclasses import dataclass

from archiver.api import setting


@dataclass(frozen=True)
class LinksSettings:
    max_parse_size: int = setting(4 * 1024 * 1024, low=1, high=1 << 32)
    """Characters of one document read for links; the rest of a larger document is ignored."""
