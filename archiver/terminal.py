"""Text from archived pages, made safe to print on a terminal.

Titles, URLs and snippets come from the web.  Printed raw, an ESC or CSI sequence in
one of them can clear the screen, set the window title, or rewrite what was printed
before.  Every human-readable output goes through `printable`; JSON output does not
need it (json.dumps escapes control characters itself) and stays exact.
"""

from __future__ import annotations

import logging
import sys

import click

__all__ = ["NOTE", "PrintableFormatter", "echo", "note", "printable", "setup_logging"]

NOTE = 25
"""A log level between INFO and WARNING: what the user is told by default that is no fault
(an `archiver control` command acknowledged, what a resume found, the cookies loaded)."""
logging.addLevelName(NOTE, "NOTE")


def note(logger: logging.Logger, message: str, *args: object) -> None:
    """Tell the user `message` (``archiver: note: ...``), unless -q or --json silenced it."""
    logger.log(NOTE, message, *args)


_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0)]
# Bidirectional overrides and isolates can make printed text read in another order.
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CONTROLS + _BIDI}
_ESCAPES_KEEP_LINES = {code: text for code, text in _ESCAPES.items() if code != 0x0A}


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with control characters (and bidi overrides) written as ``\\xNN`` escapes.

    `keep_newlines` leaves line breaks alone, for text laid out over several lines.
    """
    return text.translate(_ESCAPES_KEEP_LINES if keep_newlines else _ESCAPES)


def echo(text: str, err: bool = False) -> None:
    """`click.echo` of `text`, its lines kept and every other control character escaped."""
    click.echo(printable(text, keep_newlines=True), err=err)


class PrintableFormatter(logging.Formatter):
    """Log lines name URLs and titles from the web: print them escaped.

    A warning or an error is for the user and reads like the command's other messages
    (``archiver: warning: ...``); the detail -v and -vv add names its logger, for whoever
    looks into the code.
    """

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= NOTE:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + self.formatException(record.exc_info)
            text = f"archiver: {record.levelname.lower()}: {message}"
        else:
            text = super().format(record)
        return printable(text, keep_newlines=True)


def setup_logging(verbose: int, quiet: bool) -> None:
    """Log lines on stderr, escaped: notes and warnings, or more with -v/-vv; only errors when `quiet`."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else NOTE)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    if level > logging.DEBUG:
        logging.getLogger("asyncio").setLevel(logging.ERROR)
