"""`archiver crawl`: the options, the configuration they make, then the runner."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import BadLines, UsageError
from ..hookspecs import PLUGIN_SETTINGS
from ..terminal import echo, setup_logging
from . import output_options, plugin_options

if TYPE_CHECKING:
    from ..config import Config
    from ..history import Mode

log = logging.getLogger("archiver")


@click.command("crawl")
@click.argument("urls", nargs=-1)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="ARCHIVE",
    help="Archive folder to write (created if missing).",
)
@click.option(
    "-c",
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="TOML config file (see config.example.toml).",
)
@click.option(
    "-i",
    "--roots-file",
    metavar="FILE",
    help="Read root URLs from FILE, one a line ('-': standard input; '#' starts a comment).",
)
@click.option("--max-tasks", type=int, help="Requests at once in all (default 10).")
@click.option("--max-redirect", type=int, help="Redirects followed per chain (default 10).")
@click.option("--max-tries", type=int, help="Attempts per URL on network errors (default 4).")
@click.option("--max-depth", type=int, help="Link distance from a root (default 50).")
@click.option("--max-pages", type=int, help="Stop queueing after this many URLs (0 = no limit).")
@click.option(
    "--max-bytes",
    metavar="SIZE",
    help="Stop (resumable) once this much is received, all runs of the crawl counted: 500M, 2G.",
)
@click.option(
    "--max-time",
    metavar="DURATION",
    help="Stop (resumable) after crawling this long, all runs of the crawl counted: 30m, 12h.",
)
@click.option(
    "--min-free-disk",
    metavar="SIZE",
    help="Stop (resumable) before the archive's disk has less free space (default 100M; 0 = off).",
)
@click.option(
    "--include",
    multiple=True,
    metavar="REGEX",
    help="Only follow pages matching (repeatable); their requisites are fetched wherever they are.",
)
@click.option(
    "--exclude", multiple=True, metavar="REGEX", help="Never fetch URLs matching, pages or requisites."
)
@click.option(
    "--strict/--lenient",
    default=None,
    help="Host matching: www. only (strict, default) or any subdomain.",
)
@click.option(
    "--requisites/--no-requisites",
    default=None,
    help="Fetch images, CSS, scripts of pages even from other hosts (default on).",
)
@click.option("--user-agent", help="User-Agent header (default names archiver and a contact URL).")
@click.option("--timeout", type=float, help="Seconds allowed for one whole response (default 120).")
@click.option(
    "--delay",
    type=float,
    help="Seconds between two requests to one host (default: robots.txt Crawl-delay, else 0.25).",
)
@click.option("--per-host-concurrency", type=int, help="Requests at once to one host (default 4).")
@click.option("--ignore-robots", is_flag=True, default=None, help="Do not obey robots.txt.")
@click.option(
    "--frontier",
    help="Where the queue lives: sqlite (default), memory, or a plugin's URL (redis://HOST:PORT/DB).",
)
@click.option(
    "--resume",
    "resume_archive",
    metavar="ARCHIVE",
    help="Continue the interrupted crawl in ARCHIVE with the configuration saved in it.",
)
@click.option("--recrawl", is_flag=True, help="Crawl again into an archive whose crawl is complete.")
@click.option(
    "--update",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ARCHIVE]",
    help="Crawl again from the roots asking only for what changed (conditional requests);"
    " --update ARCHIVE alone uses the settings saved in ARCHIVE.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Fetch only robots.txt; say for each root which rules admit it, and write nothing.",
)
@click.option(
    "--cookies",
    "cookies_file",
    metavar="FILE",
    help="Load a Netscape cookies.txt (exported from a browser) into the crawl's cookie jar.",
)
@click.option(
    "--no-cookies",
    "no_cookies",
    is_flag=True,
    default=None,
    help="Keep no cookies: every request goes without (by default a jar per crawl, kept in ARCHIVE).",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="Send this header to the roots' hosts (repeatable).",
)
@click.option(
    "--auth",
    "auth",
    multiple=True,
    metavar="HOST",
    help="HTTP Basic login for HOST (as the URL writes it, with its port) from ~/.netrc's"
    " `machine HOST`, else ARCHIVER_LOGIN and ARCHIVER_PASSWORD (repeatable).",
)
@click.option(
    "--allow-logout",
    is_flag=True,
    default=None,
    help="Follow sign-out links even when cookies or credentials are given.",
)
@click.option(
    "--expect-text",
    metavar="TEXT",
    help="Stop with an error when the page a root leads to does not show TEXT (e.g. 'Sign out'):"
    " the login did not work.",
)
@click.option(
    "--redact-credentials",
    is_flag=True,
    default=None,
    help="Store Cookie, Authorization and --header values as [redacted] in the WARC request records.",
)
@click.option(
    "--proxy",
    metavar="URL|env",
    help="Send every request through this http:// proxy; 'env' uses HTTP_PROXY, HTTPS_PROXY, NO_PROXY.",
)
@click.option(
    "--ca-certificate",
    metavar="FILE",
    help="Also trust the certificate authorities of this PEM file (an intranet's own).",
)
@click.option(
    "--no-check-certificate",
    "no_check_certificate",
    is_flag=True,
    default=None,
    help="Accept any TLS certificate (expired, self-signed, another host's): warned, and said in the WARC.",
)
@plugin_options
@output_options
def crawl_command(
    urls: Sequence[str],
    output: str | None,
    config_file: Path | None,
    plugins: Sequence[str],
    disabled: Sequence[str],
    verbose: int,
    quiet: bool,
    as_json: bool,
    ignore_robots: bool | None,
    no_cookies: bool | None,
    cookies_file: str | None,
    no_check_certificate: bool | None,
    **options: Any,
) -> None:
    """Crawl the site(s) at URLS into the archive folder ARCHIVE.

    Follows links and redirects within the roots' hosts, fetches page requisites,
    writes every HTTP exchange through the plugins (WARC files, full-text index), and
    ends with a report (ARCHIVE/report.json, per-URL log in ARCHIVE/crawl-log.jsonl).
    """
    from ..config import load_config

    setup_logging(verbose, quiet or as_json)
    resume_archive: str | None = options.pop("resume_archive")
    recrawl: bool = options.pop("recrawl")
    update: str | None = options.pop("update")
    if update and "://" in update:  # a bare --update followed by a URL
        urls, update = (update, *urls), ""
    elif update:
        if resume_archive is not None:
            raise click.UsageError("give --update ARCHIVE or --resume ARCHIVE, not both")
        resume_archive = update
    dry: bool = options.pop("dry_run")
    roots_file: str | None = options.pop("roots_file")
    if roots_file is not None:
        urls = (*urls, *read_roots_file(roots_file))
    overrides: dict[str, Any] = {k: v for k, v in options.items() if v not in (None, ())}
    if urls:
        overrides["roots"] = tuple(urls)
    if output:
        overrides["output"] = output
    if ignore_robots:
        overrides["robots"] = False
    if no_cookies:
        overrides["cookies"] = False
    if no_check_certificate:
        overrides["check_certificate"] = False
    if options.get("ca_certificate"):
        overrides["ca_certificate"] = str(Path(options["ca_certificate"]).expanduser().resolve())
    if cookies_file:
        if no_cookies:
            raise click.UsageError("give --cookies FILE or --no-cookies, not both")
        overrides["cookies_file"] = str(Path(cookies_file).expanduser().resolve())
    plugin_settings = click.get_current_context().meta.get(PLUGIN_SETTINGS)
    if plugin_settings:
        overrides["plugins"] = plugin_settings
    if resume_archive is not None:
        from ..resume import resumed_config

        if urls or roots_file or config_file or (output and Path(output) != Path(resume_archive)):
            raise click.UsageError("--resume ARCHIVE uses the URLs and config saved in ARCHIVE; give neither")
        config = resumed_config(Path(resume_archive), overrides, update=update is not None)
    else:
        config = load_config(config_file, overrides)
    if plugins or disabled:
        config = config.replace(enable=(*config.enable, *plugins), disable=(*config.disable, *disabled))
    if not config.roots:
        raise click.UsageError("give at least one URL to crawl (or roots in the config file)")
    if not config.output:
        raise click.UsageError("-o ARCHIVE is missing: name the folder the crawl writes into")
    from ..urls import clean_url

    for root in config.roots:
        if clean_url(root) is None:
            guess = _with_scheme(root)
            hint = f"; did you mean {guess}?" if guess else ""
            raise click.BadParameter(f"{root!r} is not an http(s) URL{hint}", param_hint="URLS")
    from ..credentials import SiteCredentials

    SiteCredentials(config)  # a header, netrc entry or credential missing: said before anything is written
    from ..tls import UNCHECKED_WARNING, client_context

    client_context(config)  # an unreadable --ca-certificate: said before anything is written
    if not config.check_certificate:
        log.warning(UNCHECKED_WARNING)
    if config.cookies_file and (cookies_file or resume_archive is None):
        from ..cookies import read_cookies_file

        read_cookies_file(Path(config.cookies_file))
    if config.robots is False and ignore_robots:
        log.warning("robots.txt is ignored for this crawl (--ignore-robots)")
    if dry:
        from ..errors import SeedError
        from ..units import plural
        from ..why import dry_run

        report, unreachable = dry_run(config)
        echo(report)
        if unreachable:  # as the crawl itself would: exit 1, so `--dry-run && crawl` stops here
            raise SeedError(
                f"{len(unreachable)} of {plural(len(config.roots), 'root')} unreachable"
                f" ({unreachable[0]}): a crawl now would fail on {'it' if len(unreachable) == 1 else 'them'}"
            )
        return
    from ..resume import plan_run, plan_update

    mode: Mode = "recrawl" if recrawl else "crawl"
    if update is not None:
        mode, recrawl = plan_update(config)
        if mode == "update" and resume_archive is None:
            _say_replaced_settings(config)
    proceed, message = plan_run(config, recrawl=recrawl)
    if mode == "update" and recrawl:
        message = f"Updating {config.output}: crawling again from its roots, fetching only what changed."
    if not proceed:
        echo(message)
        return
    if message and not quiet:
        echo(message, err=True)
    from ..runner import crawl_and_report  # the engine (aiohttp) is imported by a crawl that runs

    again = f"resume into {config.output}"
    crawl_and_report(config, quiet=quiet, as_json=as_json, again=again, mode=mode)


def _say_replaced_settings(config: Config) -> None:
    """Warn that `crawl --update URL -o ARCHIVE` replaces the settings ARCHIVE's crawl was made with."""
    from ..resume import replaced_settings

    changed = replaced_settings(config, Path(config.output))
    if not changed:
        return
    shown = "; ".join(changed[:8]) + (f"; and {len(changed) - 8} more" if len(changed) > 8 else "")
    log.warning(
        "this command line replaces settings saved in %s: %s (they are saved for later runs too;"
        " `archiver crawl --update %s` alone keeps the saved ones)",
        config.output,
        shown,
        config.output,
    )


def _with_scheme(root: str) -> str | None:
    """``https://example.org/`` for ``example.org`` (a host name without a scheme), and
    ``http://127.0.0.1:8000/`` for an address or a name with a port (a local server, which curl
    and wget reach over http as they do anything without a scheme); else None."""
    from ..urls import clean_url, literal_address

    if "://" in root or root.startswith(("/", ".")) or not root.strip():
        return None
    rest = root.strip()
    if "/" not in rest:
        rest += "/"
    authority = rest.split("/", 1)[0]
    if authority.startswith("["):
        host, _, port = authority[1:].partition("]")
    else:
        host, _, port = authority.partition(":")
    address = literal_address(host) is not None
    local = bool(port) or address or host == "localhost"
    guess = ("http://" if local else "https://") + rest
    if clean_url(guess) is None or ("." not in host and not address and not host.startswith("localhost")):
        return None
    return guess


_TRAILING_COMMENT = re.compile(r"\s#.*")


def read_roots_file(name: str) -> list[str]:
    """Root URLs of a file (or standard input for '-'), one a line, as wget's `-i` reads them.

    Blank lines and lines starting with '#' are skipped, and so is a comment after a URL
    (`#` after a space: a URL's own fragment has none before it); any other line must be an
    http(s) URL, or the crawl does not start (every bad line is named at once).
    """
    from ..urls import clean_url

    where = "standard input" if name == "-" else name
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--roots-file: cannot read {where}: {reason}") from None
    roots: list[str] = []
    bad: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = _TRAILING_COMMENT.sub("", line).strip()
        if not line or line.startswith("#"):
            continue
        if any(char.isspace() for char in line):
            bad.append(f"{where}:{number}: {line!r} holds a space: one URL a line")
        elif clean_url(line) is None:
            bad.append(f"{where}:{number}: {line!r} is not an http(s) URL")
        else:
            roots.append(line)
    if bad:
        raise BadLines(bad)
    if not roots:
        raise UsageError(f"--roots-file: {where} holds no URL")
    return roots
