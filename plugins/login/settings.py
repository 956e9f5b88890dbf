"""The ``[plugins.login]`` table, checked by the core (`archiver.settings`)."""

from __future__ import annotations

from dataclasses import dataclass

from archiver.api import setting


def _web_url(url: str) -> str | None:
    return (
        None
        if not url or url.startswith(("http://", "https://"))
        else f"expected an http(s) URL, got {url!r}"
    )


@dataclass(frozen=True)
class LoginSettings:
    """A form login before the crawl; docs/login.md explains each key."""

    form: str = setting("", check=_web_url)
    """The page holding the login form (``--login-form URL``); empty logs in nowhere."""
    user_field: str = ""
    """The form field that takes the login; empty: the text or email field before the password."""
    password_field: str = ""
    """The form field that takes the password; empty: the form's password field."""
    login_env: str = "ARCHIVER_LOGIN"
    password_env: str = "ARCHIVER_PASSWORD"
    """Where the login and password come from when ~/.netrc has no entry for the form's host."""
