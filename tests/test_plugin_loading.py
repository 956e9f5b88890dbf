"""An installed plugin that fails to import is reported once and skipped, never fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ERROR = "No module named 'a_dependency_nobody_installed'"


@pytest.fixture
def broken_site(tmp_path: Path) -> Path:
    """A folder on sys.path holding a distribution whose entry point `broken` cannot import."""
    site = tmp_path / "site"
    info = site / "archiver_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: archiver-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[archiver]\nbroken = archiver_broken\n")
    (site / "archiver_broken.py").write_text("import a_dependency_nobody_installed\n")
    return site


def run(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_a_broken_plugin_is_reported_once_and_skipped(broken_site: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    archive.mkdir()
    (archive / "crawl.toml").write_text("")
    status = run(broken_site, "status", str(archive), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    warnings = [line for line in status.stderr.splitlines() if "broken" in line]
    assert len(warnings) == 1
    assert "'broken'" in warnings[0] and "archiver_broken" in warnings[0] and ERROR in warnings[0]
    assert "Traceback" not in status.stderr


def test_plugins_lists_it_as_failed(broken_site: Path, tmp_path: Path) -> None:
    listed = run(broken_site, "plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert ERROR in rows["broken"]["failed"] and rows["broken"]["entry_point"] == "archiver_broken"
    assert "failed" not in rows["links"]
    text = run(broken_site, "plugins", cwd=tmp_path)
    assert any(line.startswith("broken: FAILED") for line in text.stdout.splitlines())


def test_disabling_it_skips_loading_it(broken_site: Path, tmp_path: Path) -> None:
    dry = ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "a"), "--dry-run", "--ignore-robots"]
    by_option = run(broken_site, *dry, "--disable-plugin", "broken", cwd=tmp_path)
    assert by_option.returncode == 0, by_option.stderr
    assert "broken" not in by_option.stderr
    config = tmp_path / "c.toml"
    config.write_text('[plugins]\ndisable = ["broken"]\n')
    by_config = run(broken_site, *dry, "-c", str(config), cwd=tmp_path)
    assert by_config.returncode == 0, by_config.stderr
    assert "broken" not in by_config.stderr
