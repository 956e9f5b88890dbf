"""The memory watchdog tells renderers from Chromium's other processes by their command line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from archiver_plugins.browser.memory import process_tree


def test_a_process_seen_before_it_reads_as_a_renderer_is_asked_again() -> None:
    """A renderer forked from the zygote first carries the zygote's command line; a watchdog
    that kept its first answer never ended that renderer, whatever its memory."""
    # the shell joins the quoted halves: its own command line does not hold the marker
    script = f"sleep 0.5; exec {sys.executable} -c 'import time; time.sleep(30)' --type=rend\"\"erer"
    child = subprocess.Popen(["sh", "-c", script])
    try:
        kinds: dict[int, bool] = {}
        early = {process.pid: process.renderer for process in process_tree(os.getpid(), kinds)}
        assert early[child.pid] is False  # still the shell
        deadline = time.monotonic() + 10
        while b"--type=renderer" not in Path(f"/proc/{child.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        later = {process.pid: process.renderer for process in process_tree(os.getpid(), kinds)}
        assert later[child.pid] is True
    finally:
        child.kill()
        child.wait()
