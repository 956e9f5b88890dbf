"""Whether a crawl is shared through Redis, and what its archive saved of it.

Hook-free helpers of the redis plugin that its hooks, `worker` and `shared` all need: kept
apart from the plugin's ``__init__`` so that none of them imports the plugin package itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archiver.api import ConfigError

SCHEMES = ("redis://", "rediss://")
INSTALL = "pip install 'redis>=5.0' (the redis extra)"


def is_shared(frontier: str) -> bool:
    return frontier.startswith(SCHEMES)


def require_redis() -> None:
    try:
        import redis  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"a Redis frontier needs the redis client, which is not installed: {INSTALL}"
        ) from None


def saved_shared_crawl(archive: Path) -> dict[str, Any] | None:
    """The configuration tables saved in `archive` when its crawl used a Redis frontier, else None."""
    import tomllib

    from archiver.api import CONFIG_NAME

    try:
        with (archive / CONFIG_NAME).open("rb") as handle:
            tables = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    crawl = tables.get("crawl")
    if isinstance(crawl, dict) and is_shared(str(crawl.get("frontier", ""))):
        return tables
    return None
