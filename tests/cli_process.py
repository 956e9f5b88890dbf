"""`archiver` in a child process from an async test, so that the site the test serves on its own
event loop keeps answering while the command runs."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

PLUGINS_ONLY = "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD"
"""Set in the child's environment, only the plugins named with --plugin load."""


async def start_archiver(
    *args: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    output: int | None = asyncio.subprocess.DEVNULL,
) -> asyncio.subprocess.Process:
    """`python -m archiver ARGS`; its stdout and stderr go together to `output`."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *map(str, args),
        cwd=cwd,
        stdout=output,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


async def archiver(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None, seconds: float = 90
) -> tuple[int, str]:
    """Run `archiver ARGS` to its end: (exit code, what it printed, stdout and stderr together)."""
    process = await start_archiver(*args, cwd=cwd, env=env, output=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(process.communicate(), seconds)
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace").strip()
