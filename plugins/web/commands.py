"""``archiver serve ARCHIVE...``: the local web UI, on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archiver.archive import require_archive
from archiver.errors import UsageError

if TYPE_CHECKING:
    from .library import Library

# The web application (asyncio, aiohttp, templates) is imported when `serve` runs, not when the
# command line is built: every other command would pay for it at start-up.

DEFAULT_PORT = 8480


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/"


async def serve_forever(library: Library, host: str, port: int, *, quiet: bool = False) -> None:
    """Listen until SIGINT or SIGTERM, then close connections and return."""
    import asyncio

    from aiohttp import web

    from .app import make_app

    app = make_app(library, host=host)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
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
    @click.option("-q", "--quiet", is_flag=True, help="Print only the URL.")
    def serve(archives: Sequence[Path], host: str, port: int, quiet: bool) -> None:
        """Search and replay ARCHIVES in a web browser (several archives at once are fine).

        Prints the URL to open.  Pages are replayed from the WARC files with their links
        rewritten to stay inside the archive; nothing is fetched from the live web.  Works
        while a crawl is still writing the archive.
        """
        import asyncio

        from .app import is_loopback
        from .library import Library

        for path in archives:
            if path.is_dir():
                require_archive(path, also=("warc", "index"), suffixes=(".warc.gz", ".warc"))
        library = Library.open(list(archives))
        if not is_loopback(host):
            click.echo(
                f"warning: listening on {host}: anyone who can reach it can read the archive", err=True
            )
        asyncio.run(serve_forever(library, host, port, quiet=quiet))
