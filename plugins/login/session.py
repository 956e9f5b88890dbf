"""The form login itself: fetch the form, send it, hand the cookies to the crawl's jar."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin

import aiohttp

from archiver.api import ConfigError, Crawl, LoginError, login_of, note, plural, site_of

from .form import login_form
from .settings import LoginSettings

log = logging.getLogger(__name__)

_MAX_PAGE = 4 * 1024 * 1024
_MAX_REDIRECTS = 5
_TIMEOUT = aiohttp.ClientTimeout(total=60)


def credentials(host: str, settings: LoginSettings) -> tuple[str, str]:
    return login_of(host, settings.login_env, settings.password_env)


async def _read(response: aiohttp.ClientResponse) -> str:
    body = await response.content.read(_MAX_PAGE)
    return body.decode(response.get_encoding() if response.charset else "utf-8", "replace")


def _jar_cookies(jar: aiohttp.CookieJar) -> list[dict[str, Any]]:
    """The session's cookies, as the crawl's jar takes them (Playwright's form)."""
    host_only = jar.host_only_cookies
    found = []
    for morsel in jar:
        domain, path = morsel["domain"], morsel["path"] or "/"
        only = (domain, path, morsel.key) in host_only
        cookie: dict[str, Any] = {
            "name": morsel.key,
            "value": morsel.value,
            "domain": domain if only else "." + domain,
            "path": path,
            "secure": bool(morsel["secure"]),
            "httpOnly": bool(morsel["httponly"]),
        }
        found.append(cookie)
    return found


async def log_in(crawl: Crawl, settings: LoginSettings) -> None:
    """Log in with the form at `settings.form`; LoginError when the site does not take it."""
    url = settings.form
    host = site_of(url)
    if host not in {site_of(root) for root in crawl.roots}:
        raise ConfigError(f"--login-form {url}: not on the host of a root, which the crawl's login is for")
    login, password = credentials(host, settings)
    headers: Mapping[str, str] = {"User-Agent": crawl.config.user_agent}
    jar = aiohttp.CookieJar(unsafe=True)
    if crawl.identity is not None:  # cookies the crawl holds already (a cookie wall, --cookies)
        for cookie in crawl.identity.browser_cookies():
            jar.update_cookies({cookie["name"]: cookie["value"]}, _origin(cookie, url))
    async with aiohttp.ClientSession(cookie_jar=jar, headers=headers, timeout=_TIMEOUT) as session:
        try:
            async with session.get(url, max_redirects=_MAX_REDIRECTS) as response:
                page, landed, status = await _read(response), str(response.url), response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _refused(url, f"cannot fetch the login page ({exc or type(exc).__name__})") from None
        form = login_form(page, landed, settings.user_field, settings.password_field)
        if form is None:
            raise _refused(url, f"the page (status {status}) holds no form with a password field")
        if form.method != "POST":
            raise _refused(url, f"the form is sent by {form.method}, which would put the password in its URL")
        if site_of(form.action) != site_of(landed) or site_of(landed) != host:
            raise _refused(
                url,
                f"the form is sent to {form.action}, another host than the login page's:"
                " the password goes to the login page's host only",
            )
        if not form.user_field:
            raise _refused(url, "no login field found; name it with [plugins.login] user_field")
        fields = [*form.fields, (form.user_field, login), (form.password_field, password)]
        target, answered = form.action, ""
        try:
            async with session.post(target, data=fields, allow_redirects=False) as response:
                status, answered = response.status, await _read(response)
                location = response.headers.get("Location")
            redirects = 0
            while status in (301, 302, 303, 307, 308) and location and redirects < _MAX_REDIRECTS:
                target = urljoin(target, location)
                if site_of(target) != host:
                    break  # logged in elsewhere (a single sign-on hand-off): the cookies so far
                redirects += 1
                async with session.get(target, allow_redirects=False) as response:
                    status, answered = response.status, await _read(response)
                    location = response.headers.get("Location")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _refused(url, f"sending the form failed ({exc or type(exc).__name__})") from None
        if status >= 400:
            raise _refused(url, f"the site answered the login with {status}: wrong login or password?")
        if login_form(answered, target) is not None:
            raise _refused(
                url, "the site answered the login with a login form again: wrong login or password?"
            )
        cookies = _jar_cookies(jar)
    if crawl.identity is not None:
        crawl.identity.take_browser_cookies(cookies)
    note(log, "logged in at %s as %s: %s for the crawl", url, login, plural(len(cookies), "cookie"))


def _refused(url: str, why: str) -> LoginError:
    return LoginError(f"--login-form {url}: {why}")


def _origin(cookie: Mapping[str, Any], url: str) -> Any:
    from yarl import URL

    scheme = "https" if cookie.get("secure") else URL(url).scheme
    return URL.build(scheme=scheme, host=str(cookie["domain"]).lstrip("."), path="/")
