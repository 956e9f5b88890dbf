"""The core's modules import one way: records and configuration, then the engine, the runner, the commands.

Read from the source with `ast`, not by importing: an import inside a function counts as much
as one at the top (it is how start-up is kept light, and it hides a cycle just as well).
"""

from __future__ import annotations

import ast
from pathlib import Path

import archiver

PACKAGE = Path(archiver.__file__).parent
PLUGIN_PACKAGES = ("plugins", "archiver_plugins", "redis")
"""The plugins, and what only a plugin may use (the Redis client is an optional extra)."""
ROOT = "archiver"
"""The package itself is initialized before any of its modules runs: an import of it is no edge."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_by(path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that the file at `path` imports, at any depth of its code."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(target for target in targets if target in modules and target not in (name, ROOT))
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_by(path, modules) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as the list of its modules (the first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_no_import_cycle_inside_the_core() -> None:
    graph = import_graph()
    assert "archiver.crawler" in graph and "archiver.runner" in graph["archiver.commands.crawl"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def importers_of(graph: dict[str, set[str]], target: str) -> set[str]:
    return {module for module, targets in graph.items() if target in targets}


def test_imports_go_one_way_engine_runner_commands() -> None:
    """Only the runner runs the engine, only commands (and the public facades) use the runner,
    and only the command line uses the commands (the API hands plugins their shared options)."""
    graph = import_graph()
    facades = {"archiver.api", "archiver.testing"}
    commands = {module for module in graph if module.startswith("archiver.commands")}
    assert importers_of(graph, "archiver.crawler") == {"archiver.runner"}
    assert importers_of(graph, "archiver.runner") <= commands | facades
    assert importers_of(graph, "archiver.commands.crawl") == {"archiver.cli"}
    assert all(
        importers_of(graph, command) <= commands | {"archiver.cli"}
        for command in commands - {"archiver.commands"}
    )
    assert importers_of(graph, "archiver.commands") <= commands | {"archiver.cli", "archiver.api"}
    assert importers_of(graph, "archiver.cli") == {"archiver.__main__"}


def test_the_core_never_imports_a_plugin_nor_redis() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {n}" for n in names if n.split(".")[0] in ("plugins", "archiver_plugins")
            ]
    assert offenders == []


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_function_level_and_relative_imports_are_edges(tmp_path: Path) -> None:
    source = PACKAGE / "commands" / "status.py"
    edges = imported_by(source, set(import_graph()))
    assert "archiver.status" in edges  # imported inside `status_command`, from the parent package


PLUGINS = PACKAGE.parent / "plugins"


def plugin_graph(plugin: str) -> dict[str, set[str]]:
    """The import graph of the modules of one bundled plugin, among themselves."""
    paths = sorted((PLUGINS / plugin).rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_by(path, modules) for path in paths}


def test_no_import_cycle_inside_the_mirror_plugin() -> None:
    """Shared records sit in a module below their users: the export and the WACZ writer
    both use `options`, and the export reaches the WACZ writer one way only."""
    graph = plugin_graph("mirror")
    assert "plugins.mirror.wacz" in graph["plugins.mirror.export"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
