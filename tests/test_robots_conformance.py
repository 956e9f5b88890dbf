"""robots.txt against the cases of Google's robots_test.cc (github.com/google/robotstxt).

Each case below is written from one of that suite's expectations: a robots.txt, a crawler
name, a URL and whether the URL may be fetched, judged by `RobotsEntry.verdict`, the check
every crawl makes.  The suite's ``ID_`` cases follow RFC 9309 and must all pass.  Of its
Google-only cases, these are followed: a user-agent value is read up to its first space
(``User-agent: Foo Bar`` is a group for ``Foo``), and a directive whose colon is missing
(``disallow /``) is read as if it were there.  Not followed, and left out: ``index.html`` as
the directory it names, the 16,664-byte line limit (we read 500 KiB a file, whole lines),
the empty URL, and the percent-escaped-letter case the suite itself calls unreliable
(``/foo/bar/%62%61%7A``: our URLs read escaped unreserved characters as themselves).
URLs with raw non-ASCII characters are left out too: a crawl's URLs are percent-encoded first.
"""

from __future__ import annotations

import pytest

from archiver.robots import RULES, RobotsEntry, parse_robots
from archiver.testing import CrawlFn, Site

GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
CASES_UPPER = "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n"
CASES_CAMEL = "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"
SPACED = "User-Agent: {name}\nAllow: /x/\nDisallow: /\n"
DOCS = "user-agent: FooBot\ndisallow: /\nallow: {pattern}\n"
F = "http://foo.bar"

CASES: list[tuple[str, str, str, str, bool]] = [
    # ID_LineSyntax_Line
    ("line: correct", "user-agent: FooBot\ndisallow: /\n", "FooBot", f"{F}/x/y", False),
    ("line: unknown names", "foo: FooBot\nbar: /\n", "FooBot", f"{F}/x/y", True),
    ("line: missing colon (Google)", "user-agent FooBot\ndisallow /\n", "FooBot", f"{F}/x/y", False),
    # ID_LineSyntax_Groups
    ("groups: x", GROUPS, "FooBot", f"{F}/x/b", True),
    ("groups: z", GROUPS, "FooBot", f"{F}/z/d", True),
    ("groups: y", GROUPS, "FooBot", f"{F}/y/c", False),
    ("groups: BarBot y", GROUPS, "BarBot", f"{F}/y/c", True),
    ("groups: BarBot w", GROUPS, "BarBot", f"{F}/w/a", True),
    ("groups: BarBot z", GROUPS, "BarBot", f"{F}/z/d", False),
    ("groups: BazBot z", GROUPS, "BazBot", f"{F}/z/d", True),
    ("groups: outside FooBot", GROUPS, "FooBot", f"{F}/foo/bar/", False),
    ("groups: outside BarBot", GROUPS, "BarBot", f"{F}/foo/bar/", False),
    ("groups: outside BazBot", GROUPS, "BazBot", f"{F}/foo/bar/", False),
    # RFC 9309 2.1: a line the parser does not know ends no group
    (
        "groups: unknown line between user-agents",
        "User-agent: FooBot\nUnknown-line: x\nUser-agent: *\nDisallow: /\n",
        "FooBot",
        f"{F}/x",
        False,
    ),
    # ID_REPLineNamesCaseInsensitive
    ("names: upper allowed", CASES_UPPER, "FooBot", f"{F}/x/y", True),
    ("names: camel allowed", CASES_CAMEL, "FooBot", f"{F}/x/y", True),
    ("names: upper disallowed", CASES_UPPER, "FooBot", f"{F}/a/b", False),
    ("names: camel disallowed", CASES_CAMEL, "FooBot", f"{F}/a/b", False),
    # ID_UserAgentValueCaseInsensitive (a value with a space: read up to it)
    *[
        (f"agent value {spelled!r} for {agent}: {path}", SPACED.format(name=spelled), agent, f"{F}{path}", ok)
        for spelled in ("FOO BAR", "foo bar", "FoO bAr")
        for agent in ("Foo", "foo")
        for path, ok in (("/x/y", True), ("/a/b", False))
    ],
    # GoogleOnly_AcceptUserAgentUpToFirstSpace
    (
        "agent up to the first space",
        "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
        "Foo",
        f"{F}/x/y",
        True,
    ),
    # ID_GlobalGroups_Secondary
    ("global: empty", "", "FooBot", f"{F}/x/y", True),
    (
        "global: specific wins",
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "FooBot",
        f"{F}/x/y",
        False,
    ),
    (
        "global: star",
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "BarBot",
        f"{F}/x/y",
        True,
    ),
    (
        "global: none matches",
        "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
        "QuxBot",
        f"{F}/x/y",
        True,
    ),
    # ID_AllowDisallow_Value_CaseSensitive
    ("case: lower", "user-agent: FooBot\ndisallow: /x/\n", "FooBot", f"{F}/x/y", False),
    ("case: upper", "user-agent: FooBot\ndisallow: /X/\n", "FooBot", f"{F}/x/y", True),
    # ID_LongestMatch
    (
        "longest 1",
        "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
        "FooBot",
        f"{F}/x/page.html",
        False,
    ),
    (
        "longest 2",
        "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        f"{F}/x/page.html",
        True,
    ),
    ("longest 2b", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", "FooBot", f"{F}/x/", False),
    ("longest 3", "user-agent: FooBot\ndisallow: \nallow: \n", "FooBot", f"{F}/x/page.html", True),
    ("longest 4", "user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot", f"{F}/x/page.html", True),
    ("longest 5a", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", f"{F}/x", False),
    ("longest 5b", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", f"{F}/x/", True),
    (
        "longest 6",
        "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
        "FooBot",
        f"{F}/x/page.html",
        True,
    ),
    (
        "longest 7a",
        "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
        "FooBot",
        f"{F}/page.html",
        False,
    ),
    ("longest 7b", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", f"{F}/page", True),
    (
        "longest 8a",
        "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        f"{F}/x/page.html",
        True,
    ),
    (
        "longest 8b",
        "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        f"{F}/x/y.html",
        False,
    ),
    (
        "longest 9a",
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        f"{F}/x/page",
        True,
    ),
    (
        "longest 9b",
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        f"{F}/y/page",
        False,
    ),
    # ID_Encoding
    (
        "encoding: query with a URL",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
        "FooBot",
        f"{F}/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
        True,
    ),
    (
        "encoding: raw 3-byte character in the rule",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "FooBot",
        f"{F}/foo/bar/%E3%83%84",
        True,
    ),
    (
        "encoding: escaped 3-byte character in the rule",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "FooBot",
        f"{F}/foo/bar/%E3%83%84",
        True,
    ),
    # ID_SpecialCharacters
    *[
        (
            f"special *: {path}",
            "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
            "FooBot",
            f"{F}{path}",
            ok,
        )
        for path, ok in (
            ("/foo/bar/quz", False),
            ("/foo/quz", True),
            ("/foo//quz", True),
            ("/foo/bax/quz", True),
        )
    ],
    *[
        (
            f"special $: {path}",
            "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
            "FooBot",
            f"{F}{path}",
            ok,
        )
        for path, ok in (
            ("/foo/bar", False),
            ("/foo/bar/qux", True),
            ("/foo/bar/", True),
            ("/foo/bar/baz", True),
        )
    ],
    *[
        (
            f"special #: {path}",
            "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
            "FooBot",
            f"{F}{path}",
            ok,
        )
        for path, ok in (("/foo/bar", True), ("/foo/quz", False))
    ],
    # GoogleOnly_DocumentationChecks (plain RFC 9309 matching)
    *[
        (f"docs {pattern}: {path}", DOCS.format(pattern=pattern), "FooBot", f"{F}{path}", ok)
        for pattern, expected in (
            (
                "/fish",
                {
                    "/bar": False,
                    "/fish": True,
                    "/fish.html": True,
                    "/fish/salmon.html": True,
                    "/fishheads": True,
                    "/fishheads/yummy.html": True,
                    "/fish.html?id=anything": True,
                    "/Fish.asp": False,
                    "/catfish": False,
                    "/?id=fish": False,
                },
            ),
            (
                "/fish*",
                {
                    "/bar": False,
                    "/fish": True,
                    "/fish.html": True,
                    "/fish/salmon.html": True,
                    "/fishheads": True,
                    "/fishheads/yummy.html": True,
                    "/fish.html?id=anything": True,
                    "/Fish.bar": False,
                    "/catfish": False,
                    "/?id=fish": False,
                },
            ),
            (
                "/fish/",
                {
                    "/bar": False,
                    "/fish/": True,
                    "/fish/salmon": True,
                    "/fish/?salmon": True,
                    "/fish/salmon.html": True,
                    "/fish/?id=anything": True,
                    "/fish": False,
                    "/fish.html": False,
                    "/Fish/Salmon.html": False,
                },
            ),
            (
                "/*.php",
                {
                    "/bar": False,
                    "/filename.php": True,
                    "/folder/filename.php": True,
                    "/folder/filename.php?parameters": True,
                    "//folder/any.php.file.html": True,
                    "/filename.php/": True,
                    "/index?f=filename.php/": True,
                    "/php/": False,
                    "/index?php": False,
                    "/windows.PHP": False,
                },
            ),
            (
                "/*.php$",
                {
                    "/bar": False,
                    "/filename.php": True,
                    "/folder/filename.php": True,
                    "/filename.php?parameters": False,
                    "/filename.php/": False,
                    "/filename.php5": False,
                    "/php/": False,
                    "/filename?php": False,
                    "/aaaphpaaa": False,
                    "//windows.PHP": False,
                },
            ),
            (
                "/fish*.php",
                {
                    "/bar": False,
                    "/fish.php": True,
                    "/fishheads/catfish.php?parameters": True,
                    "/Fish.PHP": False,
                },
            ),
        )
        for path, ok in expected.items()
    ],
    (
        "precedence 1",
        "user-agent: FooBot\nallow: /p\ndisallow: /\n",
        "FooBot",
        "http://example.com/page",
        True,
    ),
    (
        "precedence 2",
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
        "FooBot",
        "http://example.com/folder/page",
        True,
    ),
    (
        "precedence 3",
        "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
        "FooBot",
        "http://example.com/page.htm",
        False,
    ),
    ("precedence 4a", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://example.com/", True),
    (
        "precedence 4b",
        "user-agent: FooBot\nallow: /$\ndisallow: /\n",
        "FooBot",
        "http://example.com/page.html",
        False,
    ),
    # ID_LinesNumbersAreCountedCorrectly: every line ending, and none at the end
    *[
        (f"line endings {name}", text, "bar", f"{F}/x", False)
        for name, text in (
            ("LF", "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n"),
            ("CRLF", "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n"),
            ("CR", "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r"),
            ("none at the end", "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /"),
            ("mixed", "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /"),
        )
    ],
    # ID_UTF8ByteOrderMarkIsSkipped
    *[
        (
            f"byte order mark {name}",
            prefix + "User-Agent: foo\nDisallow: /AnyValue\n",
            "foo",
            f"{F}/AnyValue",
            False,
        )
        for name, prefix in (("whole", "\ufeff"), ("none", ""))
    ],
]


@pytest.mark.parametrize(
    ("robots", "agent", "url", "allowed"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_google_robotstxt_cases(robots: str, agent: str, url: str, allowed: bool) -> None:
    entry = RobotsEntry("x", RULES, "", parser=parse_robots(robots.encode()))
    assert entry.verdict(url, agent.lower(), 1).allowed is allowed


CORRECTED = [
    case
    for case in CASES
    if (
        case[0].startswith(("groups: unknown line", "agent value", "agent up to", "byte order mark whole"))
        and not case[4]
    )
    or case[0] == "agent up to the first space"
]


@pytest.mark.xfail(
    strict=True,
    reason="protego 0.7 ends a group at an unknown line, matches no crawler with a spaced"
    " user-agent value and reads a byte order mark as part of the first line: to report to"
    " scrapy/protego; `archiver.robots_lines` corrects the text until then (strict: a fixed"
    " protego makes this pass, and the correction can go)",
)
@pytest.mark.parametrize(
    ("robots", "agent", "url", "allowed"),
    [case[1:] for case in CORRECTED],
    ids=[case[0] for case in CORRECTED],
)
def test_protego_alone(robots: str, agent: str, url: str, allowed: bool) -> None:
    from protego import Protego

    assert Protego.parse(robots).can_fetch(url, agent.lower()) is allowed


async def test_a_crawl_obeys_the_group_an_unknown_line_sits_in(site: Site, crawl_archive: CrawlFn) -> None:
    """The first case above through a real crawl: the server never sees /private."""
    site.page("/", links=["/private", "/public"])
    site.page("/private", "secret")
    site.page("/public", "fine")
    robots = "User-agent: FooBot\nUnknown-line: x\nUser-agent: *\nDisallow: /private\n"
    site.page("/robots.txt", robots, content_type="text/plain")
    await crawl_archive(site.url("/"), robots=True, user_agent="FooBot/1.0")
    assert site.hits["/public"] == 1 and site.hits["/private"] == 0
