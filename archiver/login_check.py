"""Whether a crawl given a login is logged in: what its cookies file holds, what its roots answer.

A login that does not work is otherwise silent: an expired cookie, a `Secure` cookie for an
http site or a wrong password give an exit code 0 and an archive of the login page or of
401s.  So the cookies file is summed up as it is loaded (for which hosts, and which cookies
can never be sent), a root that answers 401 or 403, or sends the crawl to a login-looking
URL, while the crawl has cookies or credentials is a warning, and `--expect-text TEXT`
stops the crawl when the page a root leads to does not show TEXT.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .cookies import Cookie
from .credentials import logged_in
from .model import Page
from .units import plural

if TYPE_CHECKING:
    from .config import Config

_LOGIN = re.compile(
    r"(?:^|[^a-z])(?:log|sign)[-_]?(?:in|on)(?:$|[^a-z])|(?:^|/)(?:auth|sso|cas)(?:$|[/?])",
    re.IGNORECASE,
)
_LOGIN_CAMEL = re.compile(r"(?<=[a-z])(?:Log|Sign)[-_]?[IO]n(?:$|[^a-z])")
_NAMED = 5
"""Cookies or hosts named in a line at most; the others are counted."""


def looks_like_login(url: str) -> bool:
    """Whether `url` reads like a sign-in page (login, sign-in, signon, wp-login.php, /auth/, ...)."""
    parts = urlsplit(url)
    pieces = (parts.path, parts.query)
    return any(pattern.search(piece) for pattern in (_LOGIN, _LOGIN_CAMEL) for piece in pieces)


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def _matches(cookie: Cookie, host: str) -> bool:
    return host == cookie.domain or (not cookie.host_only and host.endswith("." + cookie.domain))


def cookies_loaded(cookies: Sequence[Cookie], source: str) -> str:
    """What a cookies file gave the jar, by host: a note for the start of the crawl."""
    hosts = sorted({cookie.domain for cookie in cookies})
    if not cookies:
        return f"--cookies {source}: no cookie in the file"
    return f"--cookies {source}: {plural(len(cookies), 'cookie')} for {_named(hosts)}"


def unusable_cookies(
    cookies: Iterable[Cookie], roots: Sequence[str], source: str, now: float | None = None
) -> list[str]:
    """Warnings for the cookies of a file that will never be sent: expired ones, and `Secure`
    ones whose host the roots reach over http only."""
    now = time.time() if now is None else now
    expired: list[str] = []
    insecure: list[str] = []
    schemes: dict[str, set[str]] = {}
    for root in roots:
        parts = urlsplit(root)
        schemes.setdefault((parts.hostname or "").lower(), set()).add(parts.scheme.lower())
    for cookie in cookies:
        if cookie.expires is not None and cookie.expires <= now:
            when = datetime.fromtimestamp(cookie.expires, UTC).strftime("%Y-%m-%d")
            expired.append(f"{cookie.name} of {cookie.domain}, {when}")
            continue
        reached = set().union(*(found for host, found in schemes.items() if _matches(cookie, host)))
        if cookie.secure and reached == {"http"}:
            insecure.append(f"{cookie.name} of {cookie.domain}")
    warnings = []
    if expired:
        warnings.append(
            f"--cookies {source}: {plural(len(expired), 'cookie')} expired, never sent"
            f" ({_named(expired)}): export the cookies again from a browser that is logged in"
        )
    if insecure:
        warnings.append(
            f"--cookies {source}: {plural(len(insecure), 'Secure cookie')} go over https only and the"
            f" roots of {'its host are' if len(insecure) == 1 else 'their hosts are'} http, never sent"
            f" ({_named(insecure)}): crawl the https:// URL"
        )
    return warnings


class LoginCheck:
    """The checks on what a root answers: a warning when a crawl with a login looks logged out,
    a failure when the page a root leads to lacks `expect_text`."""

    def __init__(self, has_login: bool, expect_text: str) -> None:
        self.has_login = has_login
        self.expect_text = " ".join(expect_text.split())

    @classmethod
    def of(cls, config: Config) -> LoginCheck:
        return cls(logged_in(config), config.expect_text)

    def root_warning(self, page: Page) -> str | None:
        """Why a root's answer looks like a failed login, for a crawl given one; else None."""
        if not self.has_login:
            return None
        hint = "the login did not work (cookies expired? a wrong password?); --expect-text TEXT stops it"
        if page.status in (401, 403):
            return f"{page.url} answered {page.status} although the crawl has cookies or credentials: {hint}"
        if page.is_redirect and page.redirect_to and looks_like_login(page.redirect_to):
            return (
                f"{page.url} redirects to {page.redirect_to}, a login page, although the crawl has"
                f" cookies or credentials: {hint}"
            )
        return None

    def landing_failure(self, page: Page) -> str | None:
        """Why the page a root led to (after its redirects) shows the crawl is not logged in."""
        if not self.expect_text or page.is_redirect:
            return None
        if self.expect_text in " ".join(page.text.split()):
            return None
        return (
            f"{page.url} (status {page.status}) does not show {self.expect_text!r} (--expect-text):"
            " the crawl is not logged in, and stopped; once the login works, crawl again with --recrawl"
        )
