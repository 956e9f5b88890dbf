"""The archive folder: created, checked and described before a crawl writes into it."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArchiveError, ConfigError, UsageError
from .layout import CONFIG_NAME

if TYPE_CHECKING:
    from .config import Config


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
    save_config(config, archive)
    return archive


def save_config(config: Config, archive: Path) -> None:
    """Write `crawl.toml` whole, then rename it into place: a resume reads the last one saved."""
    target = archive / CONFIG_NAME
    tmp = target.with_suffix(".toml.tmp")
    tmp.write_text(dump_toml(config.to_toml_dict()), encoding="utf-8")
    os.replace(tmp, target)


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
