"""Running archiver on a pseudo-terminal of a fixed width, as a user's terminal would."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTH = 80


def run_on_terminal(
    args: list[str],
    cwd: Path,
    timeout: float,
    *,
    interrupt_when: str | None = None,
    meanwhile: Callable[[str], bool] | None = None,
) -> tuple[int, str]:
    """Run archiver with its output on a pseudo-terminal WIDTH columns wide; (exit code, text).

    With `interrupt_when`, Ctrl-C (SIGINT to the command's process group) is pressed once that
    text shows; `meanwhile` is called with the output so far until it answers True.
    """
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, WIDTH, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "CI", "TERM")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
            if interrupt_when is not None or meanwhile is not None:
                shown = b"".join(chunks).decode("utf-8", "replace")
                if meanwhile is not None and meanwhile(shown):
                    meanwhile = None
                if interrupt_when is not None and interrupt_when in screen_text(shown):
                    interrupt_when = None
                    os.killpg(proc.pid, signal.SIGINT)
    finally:
        if proc.poll() is None and time.monotonic() >= deadline:
            proc.kill()
        code = proc.wait(timeout=30)
        os.close(leader)
    return code, b"".join(chunks).decode("utf-8", "replace")


def screen_text(output: str) -> str:
    """The output with terminal escapes taken for line breaks."""
    return _ESCAPE.sub("\n", output)


def screen_lines(output: str) -> list[str]:
    return [line for line in re.split(r"[\r\n]+", screen_text(output)) if line.strip()]
