"""`archiver why` and `crawl --dry-run` name the rule that decided a URL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.config import load_config
from archiver.model import LinkKind
from archiver.robots import entry_from_body, origin_of
from archiver.testing import CrawlFn, Site
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
    assert old.decided_by == "robots.txt Disallow: /docs/old (User-agent: *)"
    assert explain("http://example.org/docs/new", config, robots).in_scope
    assert explain("http://example.org/docs/old", config, None).in_scope
    requisites = config.replace(requisites=True)
    assert explain("http://10.0.0.1/docs/", requisites, robots).decided_by.startswith(
        "host: 10.0.0.1 is not the host of a root ("
    )
    css = explain("http://example.org/_static/a.css", requisites, robots, kind=LinkKind.REQUISITE)
    assert css.in_scope
    assert "include patterns narrow the pages followed" in " ".join(step.detail for step in css.steps)
    assert not explain("http://example.org/_static/", requisites, robots).in_scope
    guarded = explain("http://10.0.0.1/docs/", requisites, robots, kind=LinkKind.REQUISITE)
    assert guarded.decided_by.startswith("address guard: 10.0.0.1 is a private address")


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


async def test_why_agrees_with_the_crawl_log_for_every_url(
    site: Site, other_site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    other_site.page("/foo", "elsewhere")
    site.page("/", links=["/a", "/skip/me", other_site.url("/foo")])
    site.page("/a", links=["/b"])
    site.page("/b", links=["/c"])
    site.page("/c", "too deep")
    crawl = await crawl_archive(site.url("/"), exclude=["/skip/"], max_depth=2)
    log = {}
    for line in (crawl.archive / "crawl-log.jsonl").read_text().splitlines():
        record = json.loads(line)
        log[record["url"]] = record
    urls = [site.url(p) for p in ("/", "/a", "/b", "/c", "/skip/me")] + [other_site.url("/foo")]
    assert {log[url]["outcome"] for url in urls} == {"fetched", "skipped"}
    assert main(["why", "--json", str(crawl.archive), *urls]) == 0
    for url, explained in zip(urls, json.loads(capsys.readouterr().out), strict=True):
        record = log[url]
        assert explained["in_scope"] == (record["outcome"] == "fetched"), url
        refused = [step for step in explained["steps"] if not step["passed"]]
        if record["outcome"] == "skipped":
            assert refused and refused[0]["detail"] == record["reason"], url
            rule, reason = refused[0]["rule"], record["reason"]
            assert explained["decided_by"] in (reason, f"{rule}: {reason}"), url
            assert not explained["decided_by"].startswith(f"{rule}: {rule}"), url
        else:
            assert not refused, url


async def test_why_another_host_is_out_of_scope(
    site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    site.page("/", "home")
    crawl = await crawl_archive(site.url("/"))
    assert main(["why", str(crawl.archive), "https://example.com/foo"]) == 0
    out = capsys.readouterr().out
    assert "NO  host" in out
    assert "ok  host" not in out
    assert "verdict: out of scope: host: example.com is not the host of a root (strict;" in out
    assert "host: host" not in out and "host out of scope" not in out


@pytest.mark.timeout(60)
def test_dry_run_of_thousands_of_roots_is_linear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 42 point 12: the rules were built again for every root, over every root: 2,000
    roots took 278 s at load 11 (1.4 s now); 5,000 would take half an hour, here a few seconds."""
    roots = tmp_path / "roots.txt"
    roots.write_text("".join(f"http://127.0.0.1:9/p{i}\n" for i in range(5000)))
    output = tmp_path / "never"
    assert main(["crawl", "-i", str(roots), "-o", str(output), "--dry-run", "--ignore-robots"]) == 0
    assert capsys.readouterr().out.count("verdict: in scope") == 5000
    assert not output.exists()
