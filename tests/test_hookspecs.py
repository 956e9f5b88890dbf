"""Meta-tests: every hook is documented, annotated, tested, and in the plugin guide.

The hook reference in docs/plugins.md is rendered from archiver/hookspecs.py; after
changing a hook, rewrite it with ``python tests/test_hookspecs.py``.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archiver import hookspecs

TESTS = Path(__file__).resolve().parent
GUIDE = TESTS.parent / "docs" / "plugins.md"
START = "<!-- hook reference: start (generated from archiver/hookspecs.py by tests/test_hookspecs.py) -->"
END = "<!-- hook reference: end -->"


def hooks() -> dict[str, Callable[..., Any]]:
    """The hook specifications, in the order the module declares them."""
    found = {
        name: function
        for name, function in vars(hookspecs).items()
        if inspect.isfunction(function) and hasattr(function, f"{hookspecs.PROJECT_NAME}_spec")
    }
    return dict(sorted(found.items(), key=lambda item: item[1].__code__.co_firstlineno))


def hook_options(function: Callable[..., Any]) -> dict[str, Any]:
    options: dict[str, Any] = getattr(function, f"{hookspecs.PROJECT_NAME}_spec")
    return options


def signature(name: str, function: Callable[..., Any]) -> str:
    sig = inspect.signature(function)
    params = ", ".join(f"{p.name}: {p.annotation}" for p in sig.parameters.values())
    return f"{name}({params}) -> {sig.return_annotation}"


def render_reference() -> str:
    """The hook reference section of the guide, from the hookspecs' signatures and docstrings."""
    parts = [START, ""]
    for name, function in hooks().items():
        parts.append(f"### `{signature(name, function)}`")
        parts.append("")
        if hook_options(function).get("firstresult"):
            parts.append("*First result wins: the call stops at the first answer that is not None.*")
            parts.append("")
        parts.append(inspect.getdoc(function) or "")
        parts.append("")
    parts.append(END)
    return "\n".join(parts)


def test_hookspecs_declare_hooks() -> None:
    assert len(hooks()) >= 8


@pytest.mark.parametrize("name", list(hooks()))
def test_every_hook_has_a_docstring_naming_each_argument(name: str) -> None:
    function = hooks()[name]
    doc = inspect.getdoc(function)
    assert doc, f"hook {name} has no docstring"
    unnamed = [
        arg
        for arg in inspect.signature(function).parameters
        # the argument as code: `crawl`, ``crawl``, ``crawl.stats``
        if not re.search(rf"`{re.escape(arg)}[`.\[(]", doc)
    ]
    assert not unnamed, f"the docstring of hook {name} does not name argument(s) {unnamed} as `code`"


@pytest.mark.parametrize("name", list(hooks()))
def test_every_hook_has_annotations(name: str) -> None:
    sig = inspect.signature(hooks()[name])
    assert sig.return_annotation is not inspect.Signature.empty, f"hook {name} has no return annotation"
    bare = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not bare, f"hook {name}: argument(s) {bare} have no type annotation"


def hook_test_names() -> set[str]:
    """Names of every test function in tests/, also async ones and methods."""
    names = set()
    for path in TESTS.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test_hook_"
            ):
                names.add(node.name)
    return names


def test_every_hook_has_a_test() -> None:
    tested = hook_test_names()
    missing = [
        name
        for name in hooks()
        if not any(test == f"test_hook_{name}" or test.startswith(f"test_hook_{name}_") for test in tested)
    ]
    assert not missing, "no test_hook_<name> test in tests/ for hook(s): " + ", ".join(missing)


def test_the_plugin_guide_has_the_current_hook_reference() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert START in text and END in text, f"{GUIDE} lacks the hook reference markers"
    current = text[text.index(START) : text.index(END) + len(END)]
    assert current == render_reference(), (
        "docs/plugins.md is out of date with archiver/hookspecs.py: run `python tests/test_hookspecs.py`"
    )


def write_reference() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    GUIDE.write_text(before + render_reference() + after, encoding="utf-8")


if __name__ == "__main__":
    write_reference()
    sys.exit(0)
