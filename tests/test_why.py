"""`archiver why` and `crawl --dry-run` name the rule that decided a URL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import CrawlFn, Site

from archiver.cli import main
from archiver.config import load_config
from archiver.robots import entry_from_body, origin_of
from archiver.why import explain


async def crawled(site: Site, crawl_archive: CrawlFn) -> Path:
    site.page("/", links=["/public", "/private/a", "/skip/me", "/deep"])
    site.page("/public", "ok")
    site.page("/private/a", "secret")
    site.page("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), robots=True, exclude=["/skip/"], max_tries=1)
    return crawl.archive


async def test_why_shows_the_log_record_and_the_rule(
    site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = await crawled(site, crawl_archive)
    assert main(["why", str(archive), site.url("/private/a"), site.url("/skip/me")]) == 0
    out = capsys.readouterr().out
    assert "skipped: robots.txt Disallow: /private/ (User-agent: *)" in out
    assert "NO  robots.txt" in out
    assert "exclude pattern '/skip/'" in out
    assert out.count("verdict: out of scope") == 2


async def test_why_json_for_a_url_never_met(
    site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = await crawled(site, crawl_archive)
    never = site.url("/a/a/a/a/x")
    assert main(["why", "--json", str(archive), never, site.url("/public")]) == 0
    trap, public = json.loads(capsys.readouterr().out)
    assert trap["logged"] is None and not trap["in_scope"]
    assert "max_repeated_segments" in trap["decided_by"]
    assert public["in_scope"] and public["logged"]["status"] == 200


def test_why_refuses_a_folder_that_is_not_an_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["why", str(tmp_path), "http://example.org/"]) == 2
    assert "not an archive" in capsys.readouterr().err


def test_explain_walks_the_rules_in_order() -> None:
    config = load_config(
        None, {"roots": ("http://example.org/",), "include": ["/docs/"], "requisites": False}
    )
    robots = {
        origin_of("http://example.org/"): entry_from_body(
            "http://example.org", 200, b"User-agent: *\nDisallow: /docs/old\n", "archiver"
        )
    }
    assert explain("mailto:x@example.org", config, robots).decided_by.startswith("scheme")
    assert explain("http://other.org/docs/", config, robots).decided_by.startswith("host")
    assert "no include pattern" in explain("http://example.org/blog/", config, robots).decided_by
    old = explain("http://example.org/docs/old/1", config, robots)
    assert old.decided_by == "robots.txt: robots.txt Disallow: /docs/old (User-agent: *)"
    assert explain("http://example.org/docs/new", config, robots).in_scope
    assert explain("http://example.org/docs/old", config, None).in_scope
    guarded = explain("http://10.0.0.1/docs/", config.replace(requisites=True), robots)
    assert guarded.decided_by.startswith("address: address guard: 10.0.0.1 is a private address")


async def test_dry_run_fetches_robots_only_and_writes_nothing(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.page("/", "home")
    site.page("/robots.txt", "User-agent: *\nDisallow: /\n", content_type="text/plain")
    output = tmp_path / "archive"
    code = await asyncio.to_thread(main, ["crawl", site.url("/"), "-o", str(output), "--dry-run"])
    assert code == 0
    out = capsys.readouterr().out
    assert "robots.txt Disallow: / (User-agent: *)" in out
    assert "verdict: out of scope" in out
    assert site.hits == {"/robots.txt": 1}
    assert not output.exists()
