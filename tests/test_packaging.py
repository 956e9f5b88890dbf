"""What `pip install site-archiver` (a wheel, not this checkout) carries: every package of the tree."""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_the_tree_is_in_the_distribution() -> None:
    """setuptools installs the packages pyproject.toml lists, and only those: a subpackage
    missing there works in an editable install and is absent from the wheel."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    in_tree = {
        ".".join([name, *init.parent.relative_to(folder).parts])
        for name, folder in folders.items()
        for init in folder.rglob("__init__.py")
    }
    assert in_tree - listed == set(), "packages missing from pyproject.toml"
    assert listed - in_tree == set(), "pyproject.toml lists packages that do not exist"


def test_package_data_patterns_match_files() -> None:
    """The web UI's static files and templates ship as package data: each pattern finds files."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    for package, patterns in setuptools["package-data"].items():
        for pattern in patterns:
            assert list(folders[package].glob(pattern)), f"{package}: {pattern} matches nothing"


def _module_file(module: str, setuptools: dict[str, Any]) -> Path | None:
    """The file the wheel holds for `module` (a package's __init__.py, or a module of a listed
    package), or None when the distribution would not carry it."""
    folders = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    top, *rest = module.split(".")
    if top not in folders:
        return None
    path = folders[top].joinpath(*rest)
    if module in setuptools["packages"] and (path / "__init__.py").is_file():
        return path / "__init__.py"
    parent = module.rpartition(".")[0]
    if parent in setuptools["packages"] and path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def test_every_entry_point_names_a_module_the_distribution_carries() -> None:
    """The `archiver` script, the bundled plugins and the pytest fixtures are found through entry
    points; one naming a module outside the listed packages imports in a checkout only."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    targets = dict(project["project"]["scripts"])
    for group, points in project["project"]["entry-points"].items():
        targets.update({f"{group}:{name}": value for name, value in points.items()})
    assert "archiver" in targets and "archiver:links" in targets
    for name, value in targets.items():
        module = value.partition(":")[0]
        assert _module_file(module, setuptools) is not None, f"{name} = {value}: not in the distribution"


def test_every_file_besides_python_is_package_data() -> None:
    """A stylesheet, template or script added to a package folder works in a checkout; the wheel
    has it only when a package-data pattern names it."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    missing = []
    for package, folder in folders.items():
        patterns = setuptools["package-data"].get(package, [])
        for path in folder.rglob("*"):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix in (".py", ".pyc"):
                continue
            relative = path.relative_to(folder)
            # setuptools' patterns are globs from the package folder: `*` stays within one folder
            if not any(
                len(relative.parts) == len(Path(pattern).parts) and relative.match(pattern)
                for pattern in patterns
            ):
                missing.append(str(path.relative_to(ROOT)))
    assert missing == [], "files the wheel would not carry"


# `archiver` on the package index is an unrelated project: `pip install archiver` installs it.
TAKEN_NAMES = {"archiver"}
_PIP_LINE = re.compile(r"pip install([^\n`]*)")
_WORD = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^\s'\"]+)")


def _pip_requirements(text: str) -> list[str]:
    """The requirement names of every `pip install ...` in `text` (not paths, options or URLs)."""
    names = []
    for line in _PIP_LINE.finditer(text):
        for quoted, double, bare in _WORD.findall(line.group(1)):
            word = quoted or double or bare
            if word in ("&&", ";", "|", "||") or word.startswith("#"):
                break
            if word.startswith(("-", ".", "/", "~")) or "/" in word:
                continue
            name = re.split(r"[\[<>=!~; ]", word, maxsplit=1)[0]
            if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
                names.append(name)
    return names


def test_every_pip_line_installs_this_distribution() -> None:
    """The distribution has a name of its own for the package index, and a `pip install` of the
    README, the docs, the example plugin or the error messages that names it uses that name
    (until it is published, they install from a clone or a wheel and name none)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name = project["name"]
    assert name not in TAKEN_NAMES and "archiver" in name
    texts = [ROOT / "README.md", ROOT / "config.example.toml", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "plugins").rglob("*.py")) + sorted((ROOT / "archiver").rglob("*.py"))
    ours = set()
    for path in texts:
        for requirement in _pip_requirements(path.read_text(encoding="utf-8")):
            if "archiver" in requirement:
                ours.add((path.relative_to(ROOT).as_posix(), requirement))
    assert {requirement for _, requirement in ours} <= {name}, sorted(ours)
    example_project = ROOT / "examples/archiver-example-plugin/pyproject.toml"
    example = tomllib.loads(example_project.read_text(encoding="utf-8"))
    assert example["project"]["dependencies"] == [name]
    from archiver.config import DEFAULT_USER_AGENT

    assert f"https://pypi.org/project/{name}/" in DEFAULT_USER_AGENT


def test_the_readme_plugin_table_is_one_table_of_every_bundled_plugin_once() -> None:
    """A blank line inside a Markdown table ends it: the rows after it render as raw pipes."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| plugin | what it does |")
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2 :]))
    after = lines[start + 2 + len(rows) :]
    assert not any(line.startswith("| `") for line in after[:3]), "the table is split by a blank line"
    names = [row.split("`")[1] for row in rows]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert names == list(project["project"]["entry-points"]["archiver"]), names
