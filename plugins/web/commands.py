"""``archiver serve ARCHIVE...``: the local web UI, on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import contextlib
import errno
import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pluggy

from archiver.api import CRAWL_FOLDERS, Hooks, UsageError, require_archive

from ..archive_reader.suffixes import IMPORT_NAMES

if TYPE_CHECKING:
    from ..replay.library import Library

# The web application (asyncio, aiohttp, templates) is imported when `serve` runs, not when the
# command line is built: every other command would pay for it at start-up.

DEFAULT_PORT = 8480
_ORIGIN = re.compile(r"https?://[^/\s]+")


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/"


async def serve_forever(
    library: Library,
    host: str,
    port: int,
    *,
    quiet: bool = False,
    allow_hosts: Sequence[str] = (),
    cors: Sequence[str] = (),
    routes: Sequence[Any] | None = None,
) -> None:
    """Listen until SIGINT or SIGTERM, then close connections and return; `routes` are the
    pages the plugins add (``register_routes``), by default those of every installed plugin."""
    import asyncio

    from aiohttp import web

    from ..replay.app import make_app

    app = make_app(library, host=host, allow_hosts=allow_hosts, cors=cors, routes=routes)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            hint = ""
            if exc.errno == errno.EADDRINUSE:
                hint = "; choose another with --port N, or --port 0 for any free one (its address is printed)"
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
        bound = runner.addresses[0][1] if runner.addresses else port
        count = len(library.handles)
        names = ", ".join(h.name for h in library.handles)
        click.echo(f"Serving {count} archive{'s' if count != 1 else ''} ({names}) at {url_for(host, bound)}")
        if not quiet:
            click.echo("Press Ctrl-C to stop.", err=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def _serve(
    library: Library,
    host: str,
    port: int,
    allow_hosts: Sequence[str],
    cors: Sequence[str],
    quiet: bool,
    routes: Sequence[Any] | None,
) -> None:
    import asyncio

    from ..replay.app import is_loopback, machine_names

    if not is_loopback(host):
        names = ", ".join(sorted({*machine_names(), *allow_hosts}))
        click.echo(
            f"warning: listening on {host}: anyone who can reach it can read the archive. "
            f"It answers requests for its IP addresses, localhost and {names}; "
            "add a name with --allow-host NAME",
            err=True,
        )
    asyncio.run(
        serve_forever(library, host, port, quiet=quiet, allow_hosts=allow_hosts, cors=cors, routes=routes)
    )


def _unpacked(path: Path, stack: contextlib.ExitStack, quiet: bool) -> Path:
    """`path`, or for a WACZ, WARC or ARC file an archive made from it in a temporary folder
    (its WARC files placed and indexed for search as `reindex --warc` does), removed at exit:
    so that search works on a bare file as on an archive.  A WARC or ARC file is linked there,
    not copied."""
    import tempfile

    from ..archive_reader.importing import import_warcs
    from ..archive_reader.wacz_input import is_wacz, unpacked_wacz

    if not (path.is_file() and path.name.endswith(IMPORT_NAMES)):
        return path
    from ..index.reindex import reindex

    wacz = is_wacz(path)
    if wacz:
        archive = unpacked_wacz(path, stack)
    else:
        suffix = next(name for name in IMPORT_NAMES if path.name.endswith(name))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="archiver-serve-")))
        archive = folder / (path.name[: -len(suffix)] or "archive")
        archive.mkdir()
        import_warcs([path.resolve()], archive, "symlink")
    reindex(archive, processes=1)
    if not quiet:
        made = "Unpacked" if wacz else "Indexed"
        click.echo(f"{made} {path} into {archive} for search (removed when the server stops)", err=True)
    return archive


def add_commands(cli: click.Group) -> None:
    @cli.command()
    @click.argument("archives", nargs=-1, required=True, type=click.Path(path_type=Path))
    @click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="Address to listen on. Anything but loopback makes the archive reachable from other machines.",
    )
    @click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=DEFAULT_PORT,
        show_default=True,
        help="Port to listen on; 0 picks a free one.",
    )
    @click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        metavar="NAME",
        help="Also answer requests for this Host name (repeatable); others get 421.",
    )
    @click.option(
        "--cors",
        multiple=True,
        metavar="ORIGIN",
        help="Let pages of ORIGIN (https://tool.example, or null: any sandboxed page, replayed "
        "scripts included) read replayed responses (repeatable).",
    )
    @click.option("-q", "--quiet", is_flag=True, help="Print only the URL.")
    def serve(
        archives: Sequence[Path],
        host: str,
        port: int,
        allow_hosts: Sequence[str],
        cors: Sequence[str],
        quiet: bool,
    ) -> None:
        """Search and replay ARCHIVES in a web browser (several archives at once are fine).

        ARCHIVES are archive folders, or WARC, ARC or WACZ files (each made into a
        temporary archive, indexed for search, while the server runs).  Prints the URL to open.  Pages are
        replayed from the WARC files with their links rewritten to stay inside the
        archive; nothing is fetched from the live web.  Works while a crawl is still
        writing the archive.
        """
        from ..replay.library import Library

        pm = click.get_current_context().obj  # the command line's plugins: none it switched off
        routes = Hooks(pm).routes() if isinstance(pm, pluggy.PluginManager) else None
        for origin in cors:
            if origin != "null" and not _ORIGIN.fullmatch(origin.rstrip("/")):
                raise UsageError(f"--cors {origin}: expected an origin such as https://tool.example:8080")
        for path in archives:
            if path.is_dir():
                require_archive(path, also=CRAWL_FOLDERS, suffixes=IMPORT_NAMES)
        unpacked = contextlib.ExitStack()
        with unpacked:
            library = Library.open([_unpacked(path, unpacked, quiet) for path in archives])
            _serve(library, host, port, allow_hosts, cors, quiet, routes)
