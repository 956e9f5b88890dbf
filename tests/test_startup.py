"""Start-up: building the command line imports no crawl engine, web server, index or Redis.

Every command, `archiver search` included, pays for what the command line imports before
it runs; the heavy libraries are imported by the commands and hooks that use them.
Checked by what a fresh interpreter has in `sys.modules`, not by timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = (
    "aiohttp",
    "redis",
    "whoosh",
    "tantivy",
    "selectolax",
    "warcio",
    "jinja2",
    "charset_normalizer",
    "asyncio",
)

# Runs in a fresh interpreter: `archiver --help`, then `--help` of every command and
# subcommand, printing the heavy top-level packages imported and each help's exit code.
PROBE = """
import io, json, sys, contextlib
import archiver.cli

def helps():
    codes = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        codes[""] = archiver.cli.main(["--help"])
        for name, command in sorted(archiver.cli.cli.commands.items()):
            codes[name] = archiver.cli.main([name, "--help"])
            for sub in sorted(getattr(command, "commands", {})):
                codes[f"{name} {sub}"] = archiver.cli.main([name, sub, "--help"])
    return codes, out.getvalue()

codes, text = helps()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))
print(json.dumps({"codes": codes, "heavy": heavy, "help": text}))
"""


@pytest.fixture(scope="module")
def probe() -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_help_of_every_command_imports_nothing_heavy(probe: dict[str, object]) -> None:
    assert probe["heavy"] == []


def test_help_of_every_command_works(probe: dict[str, object]) -> None:
    codes = probe["codes"]
    assert isinstance(codes, dict)
    assert {"", "crawl", "search", "reindex", "serve", "export", "status", "why", "worker", "merge"} <= set(
        codes
    )
    assert {"warc check", "warc ls"} <= set(codes)
    assert set(codes.values()) == {0}


def test_help_still_lists_options(probe: dict[str, object]) -> None:
    text = str(probe["help"])
    for option in ("--time-limit", "--max-chars", "--format", "--mark-missing", "--port", "--frontier"):
        assert option in text
    assert "[default: 5.0;" in text  # search --time-limit
    assert "200000; x>=1000]" in text  # reindex --max-chars


def test_defaults_repeated_for_the_command_line_agree() -> None:
    from archiver_plugins.index import commands as index_commands
    from archiver_plugins.index import search, store
    from archiver_plugins.mirror import commands as mirror_commands
    from archiver_plugins.mirror import export

    assert index_commands.DEFAULT_TIME_LIMIT == search.DEFAULT_TIME_LIMIT
    assert index_commands.DEFAULT_MAX_CHARS == store.DEFAULT_MAX_CHARS
    assert mirror_commands.FORMATS == export.FORMATS


def test_warc_plugin_and_reader_exports_load_on_first_use() -> None:
    import archiver_plugins.archive_reader as archive_reader
    import archiver_plugins.warc as warc
    from archiver_plugins.archive_reader import reader
    from archiver_plugins.warc import writer

    assert archive_reader.open_archive is reader.open_archive
    assert warc.WarcWriter is writer.WarcWriter
    with pytest.raises(AttributeError):
        _ = warc.no_such_name
    with pytest.raises(AttributeError):
        _ = warc.open_archive  # the reader is a library of its own, not the writer plugin's
