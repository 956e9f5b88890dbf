"""Bundled plugin login: a form login before the crawl (``--login-form URL``), as Scrapy's
``FormRequest.from_response`` or wget's ``--post-data`` after a look at the form.

As the crawl starts, the page at the URL is fetched, its login form read (the form with a
password field, its hidden fields such as a CSRF token kept), the login and password put in
from ``~/.netrc``'s ``machine HOST`` (or ``ARCHIVER_LOGIN``/``ARCHIVER_PASSWORD``), and the
form sent; the cookies the site answers with go to the crawl's jar, so every page after is
fetched logged in.  The password goes to the login page's host only: a form sent elsewhere,
or by GET (the password in the URL), is refused.  The exchange is not archived: it holds the
password.  A site that answers with its login form again (a wrong password) stops the crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.api import add_crawl_option, hookimpl

if TYPE_CHECKING:
    import click

    from archiver.api import Config, Crawl


@hookimpl
def configure(config: Config) -> None:
    from .settings import LoginSettings

    settings = config.plugin_settings("login", LoginSettings)
    if settings.form:
        from archiver.api import site_of

        from .session import credentials

        credentials(site_of(settings.form), settings)  # missing credentials: said before anything is written


@hookimpl
def register_commands(cli: click.Group) -> None:
    add_crawl_option(
        cli,
        "login",
        "form",
        "--login-form",
        metavar="URL",
        help="Log in first with the form on the page at URL (login and password from ~/.netrc"
        " or ARCHIVER_LOGIN and ARCHIVER_PASSWORD); the crawl goes on with its cookies.",
    )


@hookimpl(tryfirst=True)  # logged in before any other plugin starts its own requests
async def crawl_started(crawl: Crawl) -> None:
    from .session import log_in
    from .settings import LoginSettings

    settings = crawl.config.plugin_settings("login", LoginSettings)
    if settings.form:
        await log_in(crawl, settings)
