"""The fixtures (`site`, `other_site`, `crawl_archive`) come from `archiver.testing`, a pytest plugin."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

_ROOT_LEVEL = logging.getLogger().level
"""The root logger's level before any test ran."""


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """A command run in-process (`archiver.cli.main`), even by a module's fixture, sets up logging
    as for a terminal (`-q`: errors only): the root logger's level goes back to what it was before
    any test and its handlers to what they were, so every test's `caplog` sees its records."""
    root = logging.getLogger()
    root.setLevel(_ROOT_LEVEL)
    handlers = list(root.handlers)
    yield
    root.setLevel(_ROOT_LEVEL)
    root.handlers[:] = handlers
