"""Imports run one way, in the core and across the plugins (docs/architecture.md, "Layers").

The core: records and configuration, then the engine, the runner, the commands; it never
imports a plugin.  Below the plugins sit libraries with no hooks (`LIBRARIES`), which import
the core through `archiver.api` only; a plugin imports `archiver.api`, the libraries and its
own modules, and another plugin only where `DECLARED` says why.  No module and no package
is part of an import cycle.

Read from the source with `ast`, not by importing: an import inside a function counts as much
as one at the top (it is how start-up is kept light, and it hides a cycle just as well).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import archiver
from archiver import layout

PACKAGE = Path(archiver.__file__).parent
PLUGINS = PACKAGE.parent / "plugins"
PLUGIN_PACKAGES = ("plugins", "archiver_plugins", "redis")
"""The plugins, and what only a plugin may use (the Redis client is an optional extra)."""
ROOTS = ("archiver", "plugins")
"""Each top package is initialized before any of its modules runs: an import of it is no edge."""
INSTALLED_AS = "archiver_plugins"
"""`plugins/` installs under this name: an import of ``archiver_plugins.x`` is one of ``plugins.x``."""

LIBRARIES = frozenset({"archive_reader", "markup", "replay"})
"""Packages below the plugins: no hook implementations, no entry point, the core through
`archiver.api` only; any plugin may import them."""
DECLARED = {
    ("web", "index"): "the search page asks the index plugin's search API; serve indexes bare WARC files",
    ("qa", "browser"): "QA loads each archived page in the browser plugin's Chromium session",
    ("qa", "mirror"): "a QA export writes into an export folder and keeps the mirror's manifest",
}
"""The only imports from one plugin into another, each with its reason."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def normalized(name: str) -> str:
    head, dot, rest = name.partition(".")
    return "plugins" + dot + rest if head == INSTALLED_AS else name


def imported_by(path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that the file at `path` imports, at any depth of its code.

    ``from P import M`` of a module M is an edge to ``P.M``, and to the package P too unless P
    holds the importer (its packages are initialized before it runs); ``from P import name``
    of anything else is an edge to P, whose ``__init__`` defines it.
    """
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ancestors = {".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 1)}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [normalized(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = normalized(node.module or "")
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
            names_of_base = len(submodules) < len(node.names)
            targets = [*submodules, *([base] if names_of_base or base not in ancestors else [])]
        else:
            continue
        found.update(target for target in targets if target in modules and target not in (name, *ROOTS))
    return found


def source_paths() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *PLUGINS.rglob("*.py")])


def import_graph() -> dict[str, set[str]]:
    """Every module of the core and of the plugins, with the modules it imports."""
    paths = source_paths()
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


def package_of(module: str) -> str:
    """``archiver`` for the core, ``plugins.NAME`` for a plugin or a library."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "plugins" and len(parts) > 1 else parts[0]


def cross_edges(graph: dict[str, set[str]]) -> Iterator[tuple[str, str]]:
    """(importer, imported) of every import from one package into another."""
    for module, targets in graph.items():
        for target in targets:
            if package_of(module) != package_of(target):
                yield module, target


def is_library(package: str) -> bool:
    return package.removeprefix("plugins.") in LIBRARIES


def test_no_import_cycle_anywhere() -> None:
    graph = import_graph()
    assert "archiver.crawler" in graph and "archiver.runner" in graph["archiver.commands.crawl"]
    assert "plugins.qa.pages" in graph and "plugins.archive_reader.reader" in graph["plugins.mirror.export"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_package_cycle() -> None:
    packages: dict[str, set[str]] = {}
    for module, target in cross_edges(import_graph()):
        packages.setdefault(package_of(module), set()).add(package_of(target))
    assert "plugins.archive_reader" in packages["plugins.warc"]
    cycle = find_cycle(packages)
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_plugins_then_libraries_then_the_api() -> None:
    """Plugins -> libraries -> `archiver.api`, one way; plugin to plugin only as declared."""
    wrong = []
    used = set()
    for module, target in sorted(cross_edges(import_graph())):
        source, destination = package_of(module), package_of(target)
        if source == "archiver":
            continue  # test_the_core_never_imports_a_plugin_nor_redis
        if destination == "archiver":
            if target != "archiver.api":
                wrong.append(f"{module} -> {target}: a plugin or a library uses archiver.api only")
        elif is_library(destination):
            continue
        elif is_library(source):
            wrong.append(f"{module} -> {target}: a library never imports a plugin")
        else:
            pair = (source.removeprefix("plugins."), destination.removeprefix("plugins."))
            used.add(pair)
            if pair not in DECLARED:
                wrong.append(f"{module} -> {target}: not a declared plugin-to-plugin import")
    assert wrong == []
    assert used == set(DECLARED), "a declared import is no longer made: drop it from DECLARED"


def test_every_import_of_the_core_by_a_plugin_is_of_the_api() -> None:
    """The same rule on the import statements themselves (``import archiver.x`` included)."""
    wrong = []
    for path in sorted(PLUGINS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            core = [n for n in names if n.split(".")[0] == "archiver" and n != "archiver.api"]
            wrong += [f"{path.relative_to(PLUGINS)}: {n}" for n in core]
    assert wrong == []


def hook_implementations(path: Path) -> list[str]:
    return [
        node.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(
            ast.unparse(decorator).split("(")[0].endswith("hookimpl") for decorator in node.decorator_list
        )
    ]


def test_libraries_hold_no_hooks_and_are_no_entry_points() -> None:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    entry_points = pyproject["project"]["entry-points"]["archiver"].values()
    packages = pyproject["tool"]["setuptools"]["packages"]
    for library in LIBRARIES:
        assert (PLUGINS / library / "__init__.py").is_file()
        assert f"{INSTALLED_AS}.{library}" in packages
        assert all(hook_implementations(path) == [] for path in (PLUGINS / library).rglob("*.py")), library
        assert not any(value.split(".")[1].split(":")[0] == library for value in entry_points)
    assert hook_implementations(PLUGINS / "qa" / "__init__.py")  # the check sees hooks where they are


def importers_of(graph: dict[str, set[str]], target: str) -> set[str]:
    return {module for module, targets in graph.items() if target in targets}


def test_imports_go_one_way_engine_runner_commands() -> None:
    """Only the runner runs the engine, only commands (and the public facades) use the runner,
    and only the command line uses the commands (the API hands plugins their shared options)."""
    graph = {module: targets for module, targets in import_graph().items() if module.startswith("archiver")}
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
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in PLUGIN_PACKAGES]
    assert offenders == []


ARCHIVE_FILES = frozenset(
    value for name, value in vars(layout).items() if name.endswith("_NAME") and isinstance(value, str)
)
ARCHIVE_FOLDERS = frozenset(
    value for name, value in vars(layout).items() if name.endswith("_FOLDER") and isinstance(value, str)
)


def spellings(path: Path) -> Iterator[str]:
    """Archive-folder names written out in `path`: a file name of the layout anywhere, a folder
    name of the layout joined to a path (``archive / "warc"``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and node.value in ARCHIVE_FILES:
            yield f"{node.value!r} line {node.lineno}"
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in ARCHIVE_FOLDERS
        ):
            yield f"/ {node.right.value!r} line {node.lineno}"


def test_archive_folder_names_are_spelled_in_the_layout_only() -> None:
    assert {"crawl.toml", "report.json", "state.sqlite"} <= ARCHIVE_FILES and "warc" in ARCHIVE_FOLDERS
    paths = [path for path in source_paths() if path.name != "layout.py"]
    found = [f"{path.relative_to(PACKAGE.parent)}: {where}" for path in paths for where in spellings(path)]
    assert found == []


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_function_level_and_relative_imports_are_edges() -> None:
    graph = import_graph()
    assert "archiver.status" in graph["archiver.commands.status"]  # inside `status_command`, from ..
    assert "plugins.qa.patch" in graph["plugins.qa.session"]  # `from .patch import`, in a function
    assert "plugins.qa" not in graph["plugins.qa.session"]  # its own package: no edge
    assert "plugins.markup.rewrite" in graph["plugins.mirror.html"]  # `from ..markup import rewrite`
    assert "plugins.markup" in graph["plugins.mirror.html"]  # and the package it runs first


def test_a_spelled_folder_name_is_found(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text('folder = archive / "warc"\nname = "report.json"\nplugin = "warc"\n')
    assert list(spellings(source)) == ["/ 'warc' line 1", "'report.json' line 2"]


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
