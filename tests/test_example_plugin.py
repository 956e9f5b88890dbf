"""The example plugin of docs/plugins.md works as the guide says: its own tests pass.

They run as a plugin author runs them, in a pytest of their own that finds archiver's
fixtures (archiver.testing) through its ``pytest11`` entry point, with the plugin's module
importable as if installed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "archiver-example-plugin"
GUIDE = EXAMPLE.parent.parent / "docs" / "plugins.md"
MODULE = "archiver_content_types"


def test_its_entry_point_names_the_module() -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["archiver"] == {"content_types": MODULE}
    assert (EXAMPLE / f"{MODULE}.py").is_file()


def guide_tests() -> str:
    """The Python block of the guide's "Testing a plugin" section: a test file of its own."""
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide[guide.index("## Testing a plugin") :]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def count_tests(source: str) -> int:
    return sum(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
        for node in ast.parse(source).body
    )


def test_its_own_tests_and_the_guides_pass_with_the_archiver_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_guide.py").write_text(guide_tests(), encoding="utf-8")
    own = (EXAMPLE / "tests" / "test_content_types.py").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(EXAMPLE), PYTHONDONTWRITEBYTECODE="1", ARCHIVER_DISABLE_PLUGIN_AUTOLOAD="1")
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", "-c", str(EXAMPLE / "pyproject.toml")]
    result = subprocess.run(
        [sys.executable, *command, "--rootdir", str(EXAMPLE), "tests", str(tmp_path / "test_guide.py")],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    count = count_tests(own) + count_tests(guide_tests())
    assert f"{count} passed" in result.stdout, result.stdout
