"""The rules that decide whether a URL joins the crawl, in the order the crawler applies them.

One list serves the crawler, which stops at the first refusal, and `archiver why`, which
prints every rule's answer: so the two cannot drift apart.  A check takes the URL, its
depth, its kind and its referrer (a root has depth 0 and no referrer) and returns the
refusal in words, or None; the words are what the crawl log records.

Stages: `link` rules judge a link found on a page, `queue` rules every URL before it
joins the frontier (roots only the rules marked `roots`), `fetch` rules the URL when it is
about to be fetched.  A `counted` rule depends on what the crawl met before (query
variants, per-host budget, plugins): `why` can only take its refusals from the crawl log,
recognized by their first word (`marks`, the `skipped_*` counter the crawler keeps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .credentials import logged_in, logout_refusal
from .model import LinkKind
from .traps import TrapDetector
from .urls import Scope, clean_url

if TYPE_CHECKING:
    from .config import Config
    from .guard import AddressGuard
    from .robots import RobotsEntry

Check = Callable[[str, int, LinkKind, str | None], str | None]
PluginCheck = Callable[[str, str | None], str | None]

LINK = "link"
QUEUE = "queue"
FETCH = "fetch"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    stage: str
    check: Check
    admits: str
    """What a pass means, in words (for `why`)."""
    roots: bool = False
    counted: bool = False
    marks: tuple[str, ...] = ()


_KIND_OF_WORDING = {"no include pattern": "include", "not an absolute": "scheme", "URL longer than": "length"}
"""Refusals whose first word does not name their rule, and the name the summary gives them."""


def reason_kind(reason: str) -> str:
    """The rule a refusal comes from, as its counter (`skipped_host`), its rule's mark and the
    crawl summary name it: the first word (``exclude pattern ...``), or for a refusal worded
    otherwise (``no include pattern matches``) its rule's name (``include``)."""
    for wording, kind in _KIND_OF_WORDING.items():
        if reason.startswith(wording):
            return kind
    return reason.split(" ", 1)[0].rstrip(":")


class Rules:
    """The crawl's rules over one configuration, scope, address guard and trap counts."""

    def __init__(
        self,
        config: Config,
        scope: Scope,
        guard: AddressGuard,
        traps: TrapDetector,
        plugins: PluginCheck | None = None,
        robots: Callable[[str], str | None] | None = None,
    ) -> None:
        self.config = config
        self.scope = scope
        self.guard = guard
        self.traps = traps
        self._plugins = plugins
        self._robots = robots
        mode = "strict" if config.strict else "lenient"
        patterns = "no include/exclude pattern set"
        if config.include or config.exclude:
            patterns = "no exclude pattern matches" + (
                ", an include pattern matches" if config.include else ""
            )
        self.ordered: tuple[Rule, ...] = (
            Rule("scheme", LINK, self.scheme, "an absolute http(s) URL", roots=True),
            Rule("depth", LINK, self.depth, f"a page within max_depth {config.max_depth}", roots=True),
            Rule("length", QUEUE, self.length, f"within max_url_length {config.max_url_length}", roots=True),
            Rule("host", QUEUE, self.host, f"same site as a root ({mode})"),
            Rule("requisites", QUEUE, self.requisites, "a page, or requisites are on"),
            Rule("patterns", QUEUE, self.patterns, patterns),
            Rule("logout", QUEUE, self.logout, logout_admits(config)),
            Rule("address", QUEUE, self.address, "no literal private address (names checked when resolved)"),
            Rule(
                "traps",
                QUEUE,
                self.trap,
                "no repeated path segment; query variants and host budget counted during the crawl",
                counted=True,
                marks=("trap", "budget"),
            ),
            Rule(
                "plugins",
                QUEUE,
                self.plugin,
                "no plugin refused it in the crawl log",
                True,
                True,
                ("refused",),
            ),
            Rule("robots.txt", FETCH, self.robots, "allowed", roots=True),
        )
        self._queue = tuple(rule.check for rule in self.ordered if rule.stage == QUEUE)
        self._queue_roots = tuple(rule.check for rule in self.ordered if rule.stage == QUEUE and rule.roots)

    def refusal(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        """The first `queue` rule that refuses the URL, in words, or None."""
        checks = self._queue_roots if depth == 0 and referrer is None else self._queue
        for check in checks:
            reason = check(url, depth, kind, referrer)
            if reason is not None:
                return reason
        return None

    # -- the checks, in order ------------------------------------------------------------

    def scheme(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return "not an absolute http(s) URL" if clean_url(url) is None else None

    def depth(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        if kind is LinkKind.PAGE and depth > self.config.max_depth:
            return f"depth {depth} > max_depth {self.config.max_depth}"
        return None

    def length(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        if len(url) > self.config.max_url_length:
            return f"URL longer than max_url_length {self.config.max_url_length}"
        return None

    def host(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        if kind is not LinkKind.PAGE and self.config.requisites:
            return None  # a page requisite may come from any host; it is never followed
        if self.scope.host_allows(url):
            return None
        widen = "; --lenient admits their subdomains" if self.config.strict else ""
        mode = "strict" if self.config.strict else "lenient"
        return f"host: {urlsplit(url).netloc or url} is not the host of a root ({mode}{widen})"

    def requisites(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return "requisites disabled" if kind is not LinkKind.PAGE and not self.config.requisites else None

    def patterns(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return self.scope.pattern_verdict(url, requisite=self.admits_requisite(kind))

    def admits_requisite(self, kind: LinkKind) -> bool:
        """Whether `kind` is a requisite the crawl fetches: include patterns do not narrow it."""
        return kind is not LinkKind.PAGE and self.config.requisites

    def logout(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return logout_refusal(url, self.config)

    def address(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        refused = self.guard.url_refusal(url)
        return None if refused is None else f"address guard: {refused}"

    def trap(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return self.traps.refusal(url)

    def plugin(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        return None if self._plugins is None else self._plugins(url, referrer)

    def robots(self, url: str, depth: int, kind: LinkKind, referrer: str | None) -> str | None:
        """robots.txt as saved by the crawl; the crawler asks its `RobotsCache` when it fetches."""
        return None if self._robots is None else self._robots(url)


def logout_admits(config: Config) -> str:
    if config.allow_logout:
        return "sign-out links are followed (--allow-logout)"
    if not logged_in(config):
        return "no sign-out link refused: the crawl has no cookies or credentials to lose"
    return (
        "not a sign-out link, nor one that deletes or revokes"
        " (logout, signout, log_out, delete, destroy, revoke, ... in the decoded path or query)"
    )


def robots_refusal(allowed: bool, reason: str | None) -> str | None:
    """A robots.txt verdict as a refusal, as the crawl log records it."""
    return None if allowed else reason or "robots.txt disallows it"


def saved_robots_check(
    entries: dict[str, RobotsEntry], agent: str, max_tries: int
) -> Callable[[str], str | None]:
    """The robots.txt rule over the outcomes a crawl saved (`why`): the same verdicts the crawl took."""
    from .robots import origin_of

    def check(url: str) -> str | None:
        entry = entries.get(origin_of(url))
        if entry is None:
            return None
        verdict = entry.verdict(url, agent, max_tries)
        return robots_refusal(verdict.allowed, verdict.reason)

    return check
