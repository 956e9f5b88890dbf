"""`archiver why ARCHIVE URL` and `archiver crawl --dry-run`: which rule decides a URL, in words.

The crawl log already records, for every URL the crawl met, what happened and why; `why`
shows that record first.  It then replays the crawl's own rules on the URL, in the order
the crawler applies them (scheme, length, host, patterns, address guard, traps, robots.txt),
with the configuration saved in the archive and the robots.txt files the crawl fetched,
so a URL the crawl never met is explained too.  Counting rules (depth, query variants,
per-host budget, max_pages) depend on the crawl's history: only the log can tell those.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config
from .errors import FetchError
from .layout import CRAWL_LOG_NAME
from .model import LinkKind, Page
from .units import size

if TYPE_CHECKING:
    from .robots import RobotsEntry
    from .rules import Rules

# The rules (robots.txt, URL canonicalization, the address guard) are imported by the
# functions that apply them: the command line imports this module for `why` and must
# start fast for every command.


@dataclass
class Step:
    rule: str
    passed: bool
    detail: str


@dataclass
class Explanation:
    url: str
    in_scope: bool
    decided_by: str
    steps: list[Step] = field(default_factory=list)
    logged: dict[str, Any] | None = None
    unreachable: bool = False
    """The host did not answer: the URL is not refused, it cannot be fetched now."""


@dataclass(frozen=True)
class Judge:
    """The rules of one configuration, built once for every URL judged (`--dry-run` judges
    each root: building them per root, over every root, was quadratic)."""

    root_keys: frozenset[str]
    rules: Rules

    @classmethod
    def of(cls, config: Config, robots: dict[str, RobotsEntry] | None) -> Judge:
        from .guard import AddressGuard
        from .robots import agent_token
        from .rules import Rules, saved_robots_check
        from .traps import TrapDetector
        from .urls import Scope, canonical_key

        scope = Scope(config.roots, config.strict, config.include, config.exclude)
        guard = AddressGuard(config.roots, allow_all=config.allow_private_redirects)
        agent = agent_token(config.user_agent)
        check_robots = saved_robots_check(robots, agent, config.max_tries) if robots is not None else None
        rules = Rules(config, scope, guard, TrapDetector(config), None, check_robots)
        return cls(frozenset(canonical_key(root) for root in config.roots), rules)


def explain(
    url: str,
    config: Config,
    robots: dict[str, RobotsEntry] | None,
    *,
    logged: dict[str, Any] | None = None,
    kind: LinkKind | None = None,
    judge: Judge | None = None,
) -> Explanation:
    """Walk the crawler's rules (`rules.Rules.ordered`) over `url`; the first refusal decides.

    `robots` maps origins to what their robots.txt said; None means robots.txt is not
    consulted (`--ignore-robots`), a missing origin means it was never fetched.  The
    depth and kind are the logged ones when the crawl met the URL; otherwise the URL is
    judged as a link found on a root (a followed page unless `kind` says otherwise).
    """
    from .robots import origin_of
    from .rules import reason_kind
    from .urls import canonical_key, clean_url

    logged_kind = (logged or {}).get("kind")
    if kind is None:
        kind = LinkKind(logged_kind) if logged_kind in {k.value for k in LinkKind} else LinkKind.PAGE
    cleaned = clean_url(url) or url
    judge = judge or Judge.of(config, robots)
    is_root = canonical_key(cleaned) in judge.root_keys
    depth, referrer = (0, None) if is_root else (1, config.roots[0] if config.roots else "")
    if logged is not None and not is_root and isinstance(logged.get("depth"), int):
        depth = logged["depth"]
    rules = judge.rules
    skipped = str(logged.get("reason")) if logged is not None and logged.get("outcome") == "skipped" else None
    steps: list[Step] = []
    for rule in rules.ordered:
        if is_root and not rule.roots:
            steps.append(Step(rule.name, True, "a root of the crawl: does not apply"))
            continue
        refused = rule.check(cleaned, depth, kind, referrer)
        if refused is None and rule.counted and skipped is not None and reason_kind(skipped) in rule.marks:
            refused = skipped  # a count of the crawl's history: only the log knows it
        if refused is not None:
            steps.append(Step(rule.name, False, refused))
            explanation = _verdict(url, steps, logged)
            if rule.name == "robots.txt" and robots is not None:
                entry = robots.get(origin_of(cleaned))
                explanation.unreachable = entry is not None and entry.unreachable
            return explanation
        if rule.name == "robots.txt":
            steps.append(Step(rule.name, True, _robots_note(cleaned, robots)))
        elif rule.name == "host" and kind is not LinkKind.PAGE and config.requisites:
            detail = "another host is fine for a page requisite (image, CSS, script): it is never followed"
            steps.append(Step(rule.name, True, detail))
        elif rule.name == "patterns" and config.include and kind is not LinkKind.PAGE and config.requisites:
            detail = "include patterns narrow the pages followed, not a requisite; no exclude pattern matches"
            steps.append(Step(rule.name, True, detail))
        elif rule.name == "depth" and kind is not LinkKind.PAGE:
            steps.append(Step(rule.name, True, f"a {kind} is not followed: no depth limit"))
        elif rule.name == "depth" and logged is None and not is_root:
            steps.append(Step(rule.name, True, "the depth a link was found at: see the log"))
        else:
            steps.append(Step(rule.name, True, rule.admits))
    return _verdict(url, steps, logged)


def _robots_note(url: str, robots: dict[str, RobotsEntry] | None) -> str:
    from .robots import origin_of

    if robots is None:
        return "not consulted (robots = false / --ignore-robots)"
    entry = robots.get(origin_of(url))
    if entry is None:
        return f"no robots.txt of {origin_of(url)} was fetched"
    return f"allowed ({entry.state}: {entry.note})"


def _verdict(url: str, steps: list[Step], logged: dict[str, Any] | None) -> Explanation:
    failed = next((s for s in steps if not s.passed), None)
    if failed is not None:
        # "depth 3 > max_depth 2" names its rule already; "host: host ..." would say it twice
        named = failed.detail.split(" ", 1)[0].rstrip(":") == failed.rule
        said = failed.detail if named else f"{failed.rule}: {failed.detail}"
        return Explanation(url, False, said, steps, logged)
    if logged is not None and logged.get("outcome") == "skipped":
        # a refusal no rule can replay (the redirect limit, the page budget)
        return Explanation(url, False, str(logged.get("reason")), steps, logged)
    return Explanation(url, True, "every rule admits it", steps, logged)


def find_in_log(archive: Path, url: str) -> dict[str, Any] | None:
    """The last crawl-log record for `url` (compared by canonical form)."""
    from .urls import canonical_key

    path = archive / CRAWL_LOG_NAME
    if not path.is_file():
        return None
    key = canonical_key(url)
    found: dict[str, Any] | None = None
    # a crawl killed mid-write leaves a torn line, maybe in the middle of a character
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if url not in line and key not in line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict):
                continue
            if record.get("url") == url or canonical_key(str(record.get("url", ""))) == key:
                found = record
    return found


def describe_log(record: dict[str, Any]) -> str:
    outcome = record.get("outcome", "fetched")
    if outcome == "skipped":
        return f"skipped: {record.get('reason')} (depth {record.get('depth')}, from {record.get('referrer')})"
    if outcome == "failed":
        return f"failed after {record.get('tries')} tries: {record.get('error')}"
    if outcome == "robots":
        return f"robots.txt fetch, HTTP {record.get('status')}: {record.get('reason')}"
    received = record.get("bytes")
    shown = size(received) if isinstance(received, int) else f"{received} bytes"
    text = f"fetched: HTTP {record.get('status')}, {shown}, depth {record.get('depth')}"
    if record.get("next_url"):
        text += f", redirect to {record['next_url']}"
    if record.get("reason"):
        text += f" ({record['reason']})"
    return text


def render(explanation: Explanation) -> str:
    lines = [explanation.url]
    if explanation.logged is not None:
        lines.append(f"  crawl log: {describe_log(explanation.logged)}")
    else:
        lines.append("  crawl log: never met by the crawl")
    for step in explanation.steps:
        lines.append(f"  {'ok ' if step.passed else 'NO '} {step.rule:<11} {step.detail}")
    verdict = "in scope" if explanation.in_scope else "out of scope"
    if explanation.unreachable:
        verdict = "unreachable (a crawl would fail and stay resumable)"
    lines.append(f"  verdict: {verdict}: {explanation.decided_by}")
    return "\n".join(lines)


async def live_robots(config: Config, urls: list[str]) -> dict[str, RobotsEntry]:
    """Fetch the robots.txt of each URL's origin now (for `--dry-run`), archiving nothing."""
    from .fetcher import default_headers, fetch, open_session
    from .frontier import Item
    from .identity import CrawlIdentity
    from .politeness import HostLimiter
    from .robots import RobotsCache

    limiter = HostLimiter(config.replace(delay=0.0))
    identity = CrawlIdentity(config, Path(config.output))  # headers, credentials, proxy; no jar read
    async with open_session(config) as session:

        async def fetch_one(url: str) -> Page:
            item = Item(url, 0, 0, None, LinkKind.REQUISITE)
            headers = {**default_headers(config), **dict(identity.headers_for(url))}
            return await fetch(session, item, headers, config, identity.proxy_for(url))

        async def ignore(page: Page) -> None:
            return None

        cache = RobotsCache(config, limiter, fetch_one, ignore)
        for url in urls:
            try:
                await cache.check(url)
            except FetchError:
                continue
        return dict(cache.entries)


def dry_run_header(config: Config) -> str:
    """The settings a dry run states before judging the roots."""
    delay = "auto (robots.txt Crawl-delay, else 0.25 s)" if config.delay < 0 else f"{config.delay:g} s"
    return "\n".join(
        [
            f"Dry run: nothing fetched but robots.txt, nothing written (archive would be {config.output}).",
            f"Politeness: {config.per_host_concurrency} requests at once per host, delay {delay},"
            f" robots.txt {'obeyed' if config.robots else 'ignored'}, user agent {config.user_agent!r}.",
            f"Limits: depth {config.max_depth}, pages {config.max_pages or 'unlimited'},"
            f" per host {config.max_pages_per_host or 'unlimited'}, body {size(config.max_body_size)},"
            f" timeout {config.timeout:g} s.",
        ]
    )


def dry_run(config: Config) -> tuple[str, list[str]]:
    """What a crawl with `config` would do with its roots, without writing anything; and the
    roots whose host did not answer (a crawl now would fail on them)."""
    import asyncio

    from .urls import clean_url

    roots = [url for url in (clean_url(r) for r in config.roots) if url is not None]
    robots = asyncio.run(live_robots(config, roots)) if config.robots else None
    lines = [dry_run_header(config), ""]
    unreachable = []
    judge = Judge.of(config, robots)
    for root in config.roots:
        explanation = explain(root, config, robots, judge=judge)
        lines.append(render(explanation))
        if explanation.unreachable:
            unreachable.append(root)
    return "\n".join(lines), unreachable
