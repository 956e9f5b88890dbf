"""Running a crawl into an archive that already holds one: resume it, or say it is done.

Before the run (`plan_run`, from `archiver crawl`): a complete archive is left alone
unless `--recrawl`, an interrupted one is resumed, a running one refused, and a URL that is not
one of the archive's roots is refused (the folder is most likely the wrong one).  At the start
of the run the crawler itself looks up, through the `archived_pages` hook, the URLs that
were in flight when the last run stopped (`Crawler._reconcile`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .archive import saved_config
from .config import SECTIONS, Config, load_config
from .errors import ArchiveError, ArchiveLockedError, ConfigError, UsageError
from .history import Mode, interrupted_update
from .layout import CONFIG_NAME, STATE_NAME
from .status import COMPLETE, NEW, NOT_RESUMABLE, RESUMABLE, RUNNING, archive_status
from .urls import clean_url

# -- before the run ------------------------------------------------------------------------


def resumed_config(archive: Path, overrides: Mapping[str, Any], *, update: bool = False) -> Config:
    """The configuration saved in `archive`, with the command line's options on top
    (for `--resume ARCHIVE`, or `--update ARCHIVE` when `update`)."""
    saved = archive / CONFIG_NAME
    if not saved.is_file():
        if update:
            what = "no archive at" if not archive.exists() else f"not an archive (no {CONFIG_NAME}):"
            raise UsageError(
                f"{what} {archive}; --update ARCHIVE crawls an existing archive again."
                f" To make a new one: archiver crawl URL -o {archive}"
            )
        raise UsageError(f"{archive} has no {CONFIG_NAME}: nothing to resume")
    return load_config(saved, {**overrides, "output": str(archive)})


_NOT_SETTINGS = frozenset({"roots", "output"})
"""Fields of `Config` that name what is crawled and where, not how."""


def replaced_settings(config: Config, archive: Path) -> list[str]:
    """``delay 0 -> auto``: each setting saved in `archive` that `config` gives another value.

    `crawl --update URL -o ARCHIVE` builds its settings from the defaults and its command line,
    as a first crawl does, and they are saved for the next run: without a word, a ``--delay 0``
    given to the first crawl would be lost on every later update.  Empty when `archive` holds
    no readable crawl.toml.
    """
    try:
        saved = load_config(archive / CONFIG_NAME)
    except (ArchiveError, ConfigError, OSError):
        return []
    changed = []
    for section, names in SECTIONS.items():
        for name in names:
            before, after = getattr(saved, name), getattr(config, name)
            if name not in _NOT_SETTINGS and before != after:
                changed.append(f"[{section}] {name} {_shown(name, before)} -> {_shown(name, after)}")
    changed.extend(
        f"[plugins.{name}]"
        for name in sorted({*saved.plugins, *config.plugins})
        if saved.plugin(name) != config.plugin(name)
    )
    return changed


def _shown(name: str, value: Any) -> str:
    if name == "delay" and isinstance(value, float) and value < 0:
        return "auto"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(repr, value)) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, str) else str(value)


def plan_update(config: Config) -> tuple[Mode, bool]:
    """`crawl --update`: the mode of the run, and whether it starts again from the roots.

    A new archive is crawled; one holding a crawl is crawled again from its roots with
    conditional requests, except an interrupted update, which resumes.
    """
    archive = Path(config.output)
    if archive_status(archive).state == NEW:
        return "crawl", False
    return "update", not (config.frontier == "sqlite" and interrupted_update(archive))


def _refuse_other_roots(config: Config, archive: Path) -> None:
    """A UsageError when a URL given is not one of the roots the archive was crawled from.

    Such a URL into a complete archive would do nothing, and into an interrupted one it would
    quietly become one more root of that crawl: most often the folder is the wrong one.
    """
    try:
        saved = saved_config(archive).get("crawl", {}).get("roots", [])
    except (ArchiveError, OSError, ValueError):
        return  # no readable crawl.toml: the status of the archive says what is wrong
    if not isinstance(saved, list) or not saved:
        return
    known = {clean_url(str(root)) or str(root) for root in saved}
    others = [root for root in config.roots if (clean_url(root) or root) not in known]
    if not others:
        return
    shown = ", ".join(map(str, saved[:3])) + (f" and {len(saved) - 3} more" if len(saved) > 3 else "")
    raise UsageError(
        f"{others[0]} is not a root of the crawl in {archive} ({shown}): crawl it into a new"
        f" folder (-o NEW), or crawl {archive} again from the URLs given with --recrawl"
    )


def plan_run(config: Config, *, recrawl: bool = False) -> tuple[bool, str]:
    """Whether to run a crawl into `config.output`, and what to tell the user about it.

    Raises `ArchiveLockedError` when another process is crawling into it.
    """
    archive = Path(config.output)
    if config.frontier not in ("sqlite", "memory"):
        return True, ""  # a plugin's frontier keeps the crawl's state elsewhere: running again rejoins it
    status = archive_status(archive)
    if status.state == RUNNING:
        who = status.holder.describe() if status.holder else "another process"
        raise ArchiveLockedError(f"{archive} is being written by {who}; wait for it or stop it first")
    if status.state == NEW:
        return True, ""
    if recrawl:
        for suffix in ("", "-wal", "-shm"):
            (archive / (STATE_NAME + suffix)).unlink(missing_ok=True)
        return True, f"Crawling {archive} again from its roots (--recrawl); earlier WARC files are kept."
    _refuse_other_roots(config, archive)
    c = status.counts
    if status.state == COMPLETE:
        totals = f" ({c.done} done, {c.failed} failed)" if status.frontier == "sqlite" else ""
        return False, (
            f"{archive} holds a complete crawl{totals}: nothing to do. Use --recrawl to crawl it again."
        )
    if status.state == RESUMABLE:
        if config.frontier != "sqlite":
            raise UsageError(
                f"{archive} holds an interrupted crawl kept in SQLite; resume it with --frontier sqlite"
                " (or start over with --recrawl)"
            )
        return True, (
            f"Resuming the crawl in {archive}: {c.done} done, {c.failed} failed,"
            f" {c.queued + c.in_flight} to fetch."
        )
    assert status.state == NOT_RESUMABLE
    raise UsageError(
        f"{archive} holds an interrupted crawl that kept no state (memory frontier);"
        " use --recrawl to crawl it again from its roots, or choose another folder"
    )
