"""What `pip install archiver` (a wheel, not this checkout) carries: every package of the tree."""

from __future__ import annotations

import tomllib
from pathlib import Path

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
