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


def guide_blocks(heading: str, language: str) -> list[str]:
    """The code blocks in `language` of the guide's section `heading`, in order."""
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide[guide.index(f"\n{heading}\n") :].split("\n## ", 2)[1]
    return [block.split("```", 1)[0] for block in section.split(f"```{language}\n")[1:]]


def guide_tests() -> str:
    """The Python block of the guide's "Testing a plugin" section: a test file of its own."""
    return guide_blocks("## Testing a plugin", "python")[0]


def guide_project() -> str:
    """The guide's pyproject.toml: its worked example's block, then the pytest settings of
    "Testing a plugin", as a reader following the guide would write the file."""
    [project] = [b for b in guide_blocks("## A worked example", "toml") if "[project]" in b]
    [pytest_settings] = guide_blocks("## Testing a plugin", "toml")
    return project + "\n" + pytest_settings


def guide_module() -> str:
    """The guide's plugin module: the worked example's block that registers the command."""
    [module] = [b for b in guide_blocks("## A worked example", "python") if "def register_commands" in b]
    return module


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


def test_the_guide_as_written_installs_and_its_tests_pass(tmp_path: Path) -> None:
    """A reader copies the guide's pyproject.toml, module and tests into a fresh folder,
    `pip install`s it and runs its tests: the plugin is installed (found through its entry
    point) and the tests pass against the guide's own module, not the example's."""
    source = tmp_path / "archiver-content-types"
    (source / "tests").mkdir(parents=True)
    (source / "pyproject.toml").write_text(guide_project(), encoding="utf-8")
    (source / f"{MODULE}.py").write_text(guide_module(), encoding="utf-8")
    (source / "tests" / "test_content_types.py").write_text(guide_tests(), encoding="utf-8")
    installed = tmp_path / "site-packages"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(installed), str(source)]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (installed / f"{MODULE}.py").is_file()

    # Run from an empty folder, so the module imported is the installed one.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(installed), PYTHONDONTWRITEBYTECODE="1")
    listed = subprocess.run(
        [sys.executable, "-m", "archiver", "plugins"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert "content_types 0.1.0: accept_url, configure, crawl_finished" in listed.stdout, listed.stdout

    (source / MODULE).with_suffix(".py").unlink()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs"]
    result = subprocess.run(
        [*command, "-c", str(source / "pyproject.toml"), "--rootdir", str(source), str(source / "tests")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{count_tests(guide_tests())} passed" in result.stdout, result.stdout


def test_the_example_is_the_guides_project() -> None:
    """What the guide's pyproject.toml says, the example's says too."""
    guide = tomllib.loads(guide_project())
    example = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))
    assert guide["build-system"] == example["build-system"]
    for key in ("name", "version", "dependencies", "entry-points"):
        assert guide["project"][key] == example["project"][key], key
    assert guide["tool"]["setuptools"] == example["tool"]["setuptools"]
    for key, value in guide["tool"]["pytest"]["ini_options"].items():
        assert example["tool"]["pytest"]["ini_options"][key] == value, key
