"""The index plugin's modules import one way, as the core's do (`test_layers.py`).

The writer drains the spool with the parallel workers, and `reindex` uses both: the workers
are handed the WARC reader by `reindex` (a function they unpickle by name), never import it.
"""

from __future__ import annotations

from pathlib import Path

import archiver_plugins.index as index_plugin
from test_layers import find_cycle, imported_by, module_name

FOLDER = Path(index_plugin.__file__).parent


def index_graph() -> dict[str, set[str]]:
    """Who imports whom among the index plugin's modules, at any depth of their code."""
    paths = sorted(FOLDER.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_by(path, modules) for path in paths}


def test_no_import_cycle_inside_the_index_plugin() -> None:
    graph = index_graph()
    assert "plugins.index.parallel" in graph["plugins.index.writer"]
    assert "plugins.index.writer" in graph["plugins.index.reindex"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_workers_never_import_the_warc_reader() -> None:
    assert "plugins.index.reindex" not in index_graph()["plugins.index.parallel"]
