"""The public API: every name of `archiver.api` imports, and the plugin guide uses nothing else."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import archiver.api
import archiver.testing

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "plugins.md"
EXAMPLE = ROOT / "examples" / "archiver-example-plugin"
PUBLIC = {"archiver.api": archiver.api, "archiver.testing": archiver.testing}


@pytest.mark.parametrize("name", archiver.api.__all__)
def test_every_public_name_imports(name: str) -> None:
    assert getattr(archiver.api, name) is not None  # run_crawl is imported on first use


@pytest.mark.parametrize("module", PUBLIC.values(), ids=PUBLIC.keys())
def test_all_lists_each_public_name_once(module: ModuleType) -> None:
    names = module.__all__
    assert len(names) == len(set(names))
    assert all(hasattr(module, name) for name in names)


def test_importing_the_api_leaves_the_engine_and_pytest_unloaded() -> None:
    """A plugin imports archiver.api on every `archiver` command: it must stay as cheap as `archiver`."""
    heavy = {"aiohttp", "pytest", "archiver.crawler"}
    code = f"import sys, archiver.api; print(sorted({heavy!r} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def python_blocks(markdown: str) -> Iterator[str]:
    yield from re.findall(r"^```python\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def archiver_imports(source: str) -> Iterator[tuple[str, str]]:
    """(module, name) of every import of an `archiver` module in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "archiver":
                    yield alias.name, ""
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "archiver":
            for alias in node.names:
                yield node.module, alias.name


def test_the_guide_imports_only_public_names() -> None:
    blocks = list(python_blocks(GUIDE.read_text(encoding="utf-8")))
    found = [pair for block in blocks for pair in archiver_imports(block)]
    assert {module for module, _ in found} == set(PUBLIC)
    for module, name in found:
        assert module in PUBLIC, f"docs/plugins.md imports {name or module} from {module}"
        assert name in PUBLIC[module].__all__, f"docs/plugins.md imports {name} from {module}"


def test_the_example_plugin_imports_only_public_names() -> None:
    files = [EXAMPLE / "archiver_content_types.py", *sorted((EXAMPLE / "tests").glob("*.py"))]
    for path in files:
        found = list(archiver_imports(path.read_text(encoding="utf-8")))
        assert found, path
        for module, name in found:
            assert module in PUBLIC and name in PUBLIC[module].__all__, f"{path.name}: {module}.{name}"


def test_lazy_attributes_import_a_name_on_first_use(tmp_path: Path) -> None:
    """The PEP 562 helper plugins use to keep heavy imports out of every command's start-up."""
    package = tmp_path / "lazy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from archiver.api import lazy_attributes\n"
        '__getattr__ = lazy_attributes(__name__, {"Heavy": ".heavy"})\n'
    )
    (package / "heavy.py").write_text("class Heavy:\n    pass\n")
    code = (
        "import sys, lazy_pkg\n"
        "before = 'lazy_pkg.heavy' in sys.modules\n"
        "first = lazy_pkg.Heavy\n"
        "print(before, 'lazy_pkg.heavy' in sys.modules, first is lazy_pkg.__dict__['Heavy'])\n"
        "try:\n    lazy_pkg.Missing\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "False True True",
        "module 'lazy_pkg' has no attribute 'Missing'",
    ]


def test_the_guide_lists_exactly_the_public_names() -> None:
    """docs/plugins.md's "What is public" names every name of `archiver.api`, and no other."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("| for | names |", text.index("## What is public"))
    table = text[start : text.index("\n\n", start)]
    listed = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", table)
    assert len(listed) == len(set(listed))
    assert set(listed) == set(archiver.api.__all__)
