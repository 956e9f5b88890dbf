"""The fixtures (`site`, `other_site`, `crawl_archive`) come from `archiver.testing`, a pytest plugin."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """A command run in-process (`archiver.cli.main`) sets up logging as for a terminal: the root
    logger's level and handlers go back as they were, so later tests' `caplog` sees their records."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
