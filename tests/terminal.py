"""Running archiver on a pseudo-terminal of a fixed width, as a user's terminal would."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTH = 80


def run_on_terminal(args: list[str], cwd: Path, timeout: float) -> tuple[int, str]:
    """Run archiver with its output on a pseudo-terminal WIDTH columns wide; (exit code, text)."""
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
    finally:
        if proc.poll() is None and time.monotonic() >= deadline:
            proc.kill()
        code = proc.wait(timeout=30)
        os.close(leader)
    return code, b"".join(chunks).decode("utf-8", "replace")


def screen_lines(output: str) -> list[str]:
    text = _ESCAPE.sub("\n", output)
    return [line for line in re.split(r"[\r\n]+", text) if line.strip()]
