"""robots.txt lines made into what protego reads as RFC 9309 means them.

protego (0.7) parses robots.txt for the crawl; against Google's robots_test.cc it goes
wrong in two ways, both corrected here on the text before it is parsed, the thinnest
place to do it (each is a case of ``tests/test_robots_conformance.py``):

* a line whose name it does not know (``Unknown-line: x``) ends its group: the
  ``User-agent:`` lines that follow start a new one, so ``User-agent: FooBot`` /
  ``Unknown-line`` / ``User-agent: *`` / ``Disallow: /`` leaves FooBot unbound.  RFC 9309
  (2.2.4) says such records are ignored: they are dropped here;
* a user-agent value with a space (``User-agent: Foo Bar``) matches no crawler; RFC 9309
  allows only a token, and Google reads the value up to its first space: so is it here.

A leading UTF-8 byte order mark is dropped as well (it would make the first line unknown).
"""

from __future__ import annotations

_USER_AGENT = frozenset({"user-agent", "useragent", "user agent"})
_KNOWN = _USER_AGENT | {
    "allow",
    "disallow",
    "dissallow",
    "dissalow",
    "disalow",
    "diasllow",
    "disallaw",
    "sitemap",
    "sitemaps",
    "site-map",
    "crawl-delay",
    "crawl delay",
    "request-rate",
    "request rate",
    "visit-time",
    "visit time",
    "host",
}
"""The names protego reads (with the misspellings it takes): any other line is a record it
does not know."""


def conforming_lines(text: str) -> str:
    """`text` without the lines RFC 9309 ignores, each user-agent value cut at its first space."""
    kept = []
    for line in text.removeprefix("\ufeff").splitlines():
        content = line.split("#", 1)[0].strip()
        if not content:
            kept.append(line)
            continue
        name, colon, value = content.partition(":")
        if not colon:  # "disallow /": Google's reading, which protego shares
            words = content.split()
            two = " ".join(words[:2]).lower()
            name, value = (two, " ".join(words[2:])) if two in _KNOWN else (words[0], " ".join(words[1:]))
        field = name.strip().lower()
        if field not in _KNOWN:
            continue
        if field in _USER_AGENT:
            token = value.split()[0] if value.split() else ""
            line = f"User-agent: {token}"
        kept.append(line)
    return "\n".join(kept)
