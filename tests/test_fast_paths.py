"""The hand-written fast paths of the crawl give exactly what the library calls they skip give.

Each fast path handles the common shape of its input and hands the rest to the reference
(`email.message`, `urlsplit`, w3lib's `safe_url_string`, `json.dumps(asdict(...))`); these
tests compare both on seeded random inputs built from the characters that matter.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict
from email.message import Message
from pathlib import Path

import pytest
from w3lib.url import safe_url_string

from archiver.crawllog import CrawlLog, UrlRecord
from archiver.model import Page, parse_content_type
from archiver.urls import _site_of, site_of, wire_url


def _outcome(fn: Callable[[str], str], value: str) -> object:
    try:
        return fn(value)
    except ValueError as exc:
        return ("ValueError", str(exc))


def reference_content_type(raw: str | None) -> tuple[str, dict[str, str]]:
    if not raw:
        return "", {}
    message = Message()
    message["Content-Type"] = raw
    params = {k.lower(): str(v) for k, v in message.get_params(failobj=[])[1:]}
    mime = message.get_content_type() if "/" in raw.split(";")[0] else ""
    return mime.lower(), params


CONTENT_TYPE_PIECES = [
    *"abT/;= \t-+.*\"\\<>(),'x",
    "charset",
    "CHARSET",
    "utf-8",
    "text/html",
    "é",
    "\x00",
    "\x7f",
]


@pytest.mark.parametrize("seed", range(3))
def test_content_type_matches_email(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20_000):
        raw = "".join(rng.choice(CONTENT_TYPE_PIECES) for _ in range(rng.randint(0, 12)))
        assert parse_content_type(raw) == reference_content_type(raw), repr(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "text/html; charset=utf-8",
        "TEXT/HTML;Charset=ISO-8859-1",
        'text/html; charset="utf-8"',
        "text/html; charset*=utf-8''%e2",
        "text; charset=utf-8",
        "a/b/c",
        " text/css ;; charset = latin-1 ; q",
        None,
        "",
    ],
)
def test_content_type_examples(raw: str | None) -> None:
    assert parse_content_type(raw) == reference_content_type(raw)
    page = Page(url="http://example.org/", status=200, headers=(("Content-Type", raw),) if raw else ())
    assert (page.content_type, page.declared_charset) == (
        reference_content_type(raw)[0],
        reference_content_type(raw)[1].get("charset"),
    )


URL_PIECES = [
    *"hHtTp:/s?#@[]:.0129abwW \t\r\n%-+é\x00\x1f",
    "http://",
    "https://",
    "www.",
    "example.org",
    ":80",
    ":443",
    "[::1]",
    "//",
]


@pytest.mark.parametrize("seed", range(3))
def test_site_of_matches_urlsplit(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20_000):
        url = "".join(rng.choice(URL_PIECES) for _ in range(rng.randint(0, 10)))
        assert _outcome(site_of, url) == _outcome(_site_of, url), repr(url)


def test_site_of_examples() -> None:
    assert site_of("http://WWW.Example.org:80/a?b#c") == "www.example.org"
    assert site_of("https://example.org:8443/") == "example.org:8443"
    assert site_of("http://exa\tmple.org/") == _site_of("http://exa\tmple.org/") == "example.org"


WIRE_PIECES = "abcXYZ019-._~!$&'()*+,;=:@/%#[]\"<> é"
HOST_PIECES = ["a", "example", "org", "127", "0", "-", "xn--bcher-kva", "www", ".", "..", "%", "_", "A"]
PORTS = ["", ":80", ":8080", ":0", ":99999", ":", ":65535", ":65536", ":00080"]


@pytest.mark.parametrize("seed", range(3))
def test_wire_url_matches_w3lib(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20_000):
        host = "".join(rng.choice(HOST_PIECES) for _ in range(rng.randint(1, 4)))
        path = "/" + "".join(rng.choice(WIRE_PIECES) for _ in range(rng.randint(0, 8)))
        query = rng.choice(["", "?", "?a=1&b=2", "?" + "".join(rng.choice(WIRE_PIECES) for _ in range(4))])
        url = rng.choice(["http://", "https://"]) + host + rng.choice(PORTS) + path + query
        assert _outcome(wire_url, url) == _outcome(safe_url_string, url), repr(url)


def test_crawl_log_line_is_the_json_of_the_record(tmp_path: Path) -> None:
    record = UrlRecord(
        url="http://example.org/é?a=1",
        status=200,
        next_url=None,
        content_type="text/html",
        encoding="utf-8",
        num_urls=3,
        num_new_urls=1,
        tries=1,
        error=None,
        depth=2,
        bytes=1234,
        elapsed=0.0125,
        reason='quote " and \\ backslash',
    )
    log = CrawlLog(tmp_path)
    log.open()
    log.write(record)
    log.close()
    line = (tmp_path / "crawl-log.jsonl").read_text(encoding="utf-8")
    assert line == json.dumps(asdict(record), ensure_ascii=False) + "\n"
