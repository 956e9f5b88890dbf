"""The query language as a user types it: hyphenated words, site: with a port, bad syntax."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from archiver_plugins.index.search import QueryError, search
from test_index_search import build

from archiver.cli import main

PAGES = {
    "http://127.0.0.1:9101/codecs.html": (
        "Codecs",
        "<p>Every file here is read as utf-8 text. Formatting uses f-strings throughout.</p>",
    ),
    "http://127.0.0.1:9101/sockets.html": (
        "Sockets",
        "<p>A non-blocking socket returns at once. Pipes and streams are covered too.</p>",
    ),
    "http://other.test/utf.html": (
        "Encodings",
        "<p>UTF stands for a family; 8 bits make a byte. Blocking calls wait."
        ' He said "fish &amp; chips".</p>',
    ),
    "http://other.test/strings.html": (
        "Strings",
        "<p>Strings and f are unrelated here: pipes, streams, and strings of beads.</p>",
    ),
}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("query") / "archive"
    build(path, PAGES)  # indexed, and written as WARC records (the snippets' text)
    return path


def urls(archive: Path, query: str, **options: str) -> set[str]:
    return {hit.url for hit in search(archive, query, limit=20, **options).hits}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("utf-8", {"http://127.0.0.1:9101/codecs.html"}),
        ("f-strings", {"http://127.0.0.1:9101/codecs.html"}),
        ("non-blocking socket", {"http://127.0.0.1:9101/sockets.html"}),
    ],
)
def test_a_hyphen_inside_a_word_joins_it(archive: Path, query: str, expected: set[str]) -> None:
    assert urls(archive, query) == expected
    assert urls(archive, query) == urls(archive, f'"{query}"')


def test_a_leading_minus_still_excludes(archive: Path) -> None:
    assert urls(archive, "pipes -socket") == {"http://other.test/strings.html"}
    assert urls(archive, "-socket pipes") == {"http://other.test/strings.html"}


def test_site_with_a_port_in_the_query_works_like_the_option(archive: Path) -> None:
    expected = {"http://127.0.0.1:9101/codecs.html", "http://127.0.0.1:9101/sockets.html"}
    assert urls(archive, "", site="127.0.0.1:9101") == expected
    assert urls(archive, "site:127.0.0.1:9101") == expected
    assert urls(archive, "site:127.0.0.1:9101 socket") == {"http://127.0.0.1:9101/sockets.html"}


@pytest.mark.parametrize("query", ["NOT NOT a", "(" * 1000 + "socket" + ")" * 1000, "pipes (-socket)"])
def test_a_query_that_cannot_be_read_is_a_query_error(archive: Path, query: str) -> None:
    with pytest.raises(QueryError) as caught:
        search(archive, query)
    assert "damaged" not in str(caught.value)


def test_parse_errors_are_one_line_on_the_command_line(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(archive), "NOT NOT a"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "damaged" not in err and "query" in err
    assert err == (
        "archiver: error: cannot read the query 'NOT NOT a': NOT NOT is two operators in a row;"
        " drop one, or write the words in lower case to search for them\n"
    )
    for fine in ("pipes AND NOT socket", "pipes OR NOT socket", '"NOT NOT" pipes'):
        assert main(["search", str(archive), fine]) in (0, 1), fine
        assert "two operators" not in capsys.readouterr().err


def test_snippets_with_quotes_are_escaped_once(archive: Path) -> None:
    from archiver_plugins.web.searching import safe_snippet

    (hit,) = search(archive, "chips").hits
    for snippet in (hit.snippet, str(safe_snippet(hit.snippet))):
        text = html.unescape(re.sub(r"<[^>]+>", "", snippet))
        assert 'He said "fish & chips' in text
