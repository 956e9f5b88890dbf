"""The one exception hierarchy for problems a user can fix.

The CLI turns an `ArchiverError` into a single line on stderr and its `exit_code`;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class ArchiverError(Exception):
    """A problem the user can act on; `str(error)` is the whole message."""

    exit_code = 1


class ConfigError(ArchiverError):
    """A bad option, config key, value or combination of them."""

    exit_code = 2


class UsageError(ArchiverError):
    """A command was given arguments that cannot work (a missing archive, a file for a folder)."""

    exit_code = 2


class ArchiveError(ArchiverError):
    """An archive folder or one of its files cannot be used as asked."""

    exit_code = 1


class ArchiveLockedError(ArchiveError):
    """Another live process is writing this archive."""


class SeedError(ArchiverError):
    """No root URL could be fetched at all (DNS failure, refused connection, ...)."""

    exit_code = 1


class FetchError(ArchiverError):
    """One URL gave no usable HTTP response; `kind` names the failure class for reports."""

    def __init__(self, url: str, message: str, *, kind: str = "network", attempts: int = 1) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url
        self.message = message
        self.kind = kind
        self.attempts = attempts
