"""`--plugin MODULE` run through the installed `archiver` script, from the plugin's own folder.

The script that pip writes puts only its own folder on `sys.path`, unlike `python -m` or a test
importing `archiver.cli`: a module beside the user is found only if archiver looks for it there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("archiver")

PLUGIN = '''
import click
from archiver.api import hookimpl

@hookimpl
def register_commands(cli):
    @cli.command("greet")
    def greet() -> None:
        """Say who answered."""
        click.echo("greetings from " + __name__)
'''


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    if not SCRIPT.is_file():
        pytest.skip(f"no archiver script beside {sys.executable}")
    (tmp_path / "greeter.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "greeter.py").write_text(PLUGIN, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("module", ["greeter", "pkg.greeter"])
def test_a_module_of_the_current_folder_loads_with_its_commands(folder: Path, module: str) -> None:
    done = run(folder, "--plugin", module, "greet")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"greetings from {module}\n", "")
    listed = run(folder, "--plugin", module, "plugins")
    assert listed.returncode == 0 and f"{module}: register_commands\n" in listed.stdout


def test_a_missing_module_is_still_a_one_line_error(folder: Path) -> None:
    done = run(folder, "--plugin", "nosuchgreeter", "plugins")
    assert done.returncode == 2
    message = "archiver: error: cannot load plugin 'nosuchgreeter': No module named 'nosuchgreeter'\n"
    assert done.stderr == message
