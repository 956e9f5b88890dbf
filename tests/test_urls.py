"""URL clean-up, canonical keys and scope rules (pure functions, no network)."""

from __future__ import annotations

import pytest

from archiver.urls import Scope, canonical_key, clean_url, site_of, wire_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://example.org/a#frag", "http://example.org/a"),
        ("  https://example.org/ ", "https://example.org/"),
        ("mailto:a@example.org", None),
        ("javascript:alert(1)", None),
        ("ftp://example.org/file", None),
        ("http://[::1", None),
        ("http://exa mple.org/", None),
        ("http:///nohost", "http://nohost/"),  # as a browser reads it
        ("http://other\\@root/x", "http://other/@root/x"),
        ("HTTP://Ex.ORG\\a\\..\\b", "http://ex.org/b"),
        ("http://0x7f.1:8080/", "http://127.0.0.1:8080/"),
        ("http://h/a/%2e%2E/b/./c", "http://h/b/c"),
        ("http://h:0/", None),
        ("data:text/html,hi", None),
    ],
)
def test_clean_url(raw: str, expected: str | None) -> None:
    assert clean_url(raw) == expected


def test_canonical_key_sorts_query_and_drops_fragment() -> None:
    assert canonical_key("http://h/p?b=2&a=1#x") == canonical_key("http://h/p?a=1&b=2")
    assert canonical_key("http://h/%7Efoo") == canonical_key("http://h/~foo")


def test_wire_url_keeps_what_was_found_but_encodes_unsafe_bytes() -> None:
    assert wire_url("http://h/a/%2e%2e/b") == "http://h/a/%2e%2e/b"
    assert wire_url("http://h/caf\u00e9?q=a b") == "http://h/caf%C3%A9?q=a%20b"


def test_site_of_drops_default_ports() -> None:
    assert site_of("http://Example.org:80/x") == "example.org"
    assert site_of("https://example.org:443/") == "example.org"
    assert site_of("http://127.0.0.1:8080/") == "127.0.0.1:8080"


def test_strict_host_matching() -> None:
    scope = Scope(["http://example.org/deep/page"], strict=True)
    assert scope.host_allows("http://example.org/other")
    assert scope.host_allows("https://www.example.org/")
    assert not scope.host_allows("http://blog.example.org/")
    assert not scope.host_allows("http://example.com/")


def test_strict_www_root() -> None:
    scope = Scope(["http://www.example.org/"], strict=True)
    assert scope.host_allows("http://example.org/")


def test_lenient_host_matching() -> None:
    scope = Scope(["http://www.example.org/"], strict=False)
    assert scope.host_allows("http://blog.example.org/")
    assert scope.host_allows("http://a.b.example.org/")
    assert not scope.host_allows("http://example.com/")


def test_ip_roots_compare_whole_address_and_port() -> None:
    scope = Scope(["http://127.0.0.1:8000/"], strict=False)
    assert scope.host_allows("http://127.0.0.1:8000/x")
    assert not scope.host_allows("http://127.0.0.1:9000/x")


def test_patterns() -> None:
    scope = Scope(["http://h/"], include=["/docs/"], exclude=[r"\.pdf$"])
    assert scope.pattern_verdict("http://h/docs/a.html") is None
    assert scope.pattern_verdict("http://h/docs/a.pdf") == r"exclude pattern '\\.pdf$'"
    assert scope.pattern_verdict("http://h/blog/") == "no include pattern matches"
