"""The archive folder: created, checked and described before a crawl writes into it."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArchiveError, ConfigError, UsageError
from .layout import CONFIG_NAME

if TYPE_CHECKING:
    from .config import Config

log = logging.getLogger(__name__)


def dump_toml(tables: dict[str, Any]) -> str:
    """The configuration's tables as TOML text (`tomllib` reads them back unchanged)."""
    import tomli_w  # only the commands that write an archive need it

    return tomli_w.dumps(tables)


def prepare_archive(config: Config) -> Path:
    """Create (or reopen) the output folder and save the effective configuration in it."""
    if not config.output:
        raise ConfigError("no output archive given (use -o ARCHIVE)")
    archive = Path(config.output)
    if archive.exists() and not archive.is_dir():
        raise ArchiveError(f"output {archive} exists and is not a folder")
    try:
        archive.mkdir(parents=True, exist_ok=True)
        probe = archive / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ArchiveError(f"cannot write to {archive}: {exc.strerror or exc}") from None
    if holds_secrets(config):
        keep_private(archive)
    save_config(config, archive)
    return archive


def holds_secrets(config: Config) -> bool:
    """Whether the archive will hold what the crawl was given to log in: its WARC request
    records (the cookies, the headers, the credentials, unless redacted), its jar, its
    `crawl.toml` (the `--header` lines, a proxy's password)."""
    from urllib.parse import urlsplit

    from .credentials import logged_in

    return logged_in(config) or bool(config.proxy and urlsplit(config.proxy).password)


def keep_private(archive: Path) -> None:
    """The archive folder readable by its owner only (0700): every file in it, the WARC files
    written later included, is then out of other users' reach whatever its own mode."""
    try:
        if archive.stat().st_mode & 0o077:
            archive.chmod(0o700)
    except OSError as exc:
        log.warning("cannot make %s private (%s): other users may read its secrets", archive, exc)


def write_private(path: Path, text: str) -> None:
    """Write `path` whole, readable by its owner only (0600), then rename it into place."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover of a killed run keeps the mode it had
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = -1
            handle.write(text)
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)


def save_config(config: Config, archive: Path) -> None:
    """Write `crawl.toml` whole, then rename it into place: a resume reads the last one saved.
    It is its owner's only (0600): it keeps the `--header` lines and the proxy's URL."""
    write_private(archive / CONFIG_NAME, dump_toml(config.to_toml_dict()))


def saved_config(archive: Path) -> dict[str, Any]:
    """The tables of the configuration a crawl saved in `archive`."""
    import tomllib

    path = archive / CONFIG_NAME
    if not path.is_file():
        raise ArchiveError(f"{archive} has no {CONFIG_NAME}: not an archive made by archiver crawl")
    with path.open("rb") as handle:
        return tomllib.load(handle)


def require_archive(path: Path, *, also: Iterable[str] = (), suffixes: tuple[str, ...] = ()) -> Path:
    """`path` when it is an archive folder, else a `UsageError` (exit 2) saying what it is.

    A folder is an archive when a crawl saved its `crawl.toml` there, or when it holds
    one of the entries named in `also` (a plugin's own folder, such as the one `reindex
    --warc` fills).  Commands that also read loose files give their names' `suffixes`:
    such a file, or a folder holding such files, is accepted too.
    """
    if not path.exists():
        raise UsageError(f"no archive at {path}")
    if path.is_file():
        if suffixes and path.name.endswith(suffixes):
            return path
        raise UsageError(f"{path} is a file, not an archive folder")
    if (path / CONFIG_NAME).is_file() or any((path / name).exists() for name in also):
        return path
    if suffixes and any(child.name.endswith(suffixes) for child in path.iterdir()):
        return path
    raise UsageError(f"{path} is not an archive (no {CONFIG_NAME})")
