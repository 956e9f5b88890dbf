"""robots.txt and --exclude/--include judge the path a server reads, not one spelling of it.

Dot segments (escaped or not), escaped unreserved characters and escaped slashes must not
carry a URL past a rule: the crawl never requests it and ``archiver why`` gives the same verdict.
"""

from __future__ import annotations

import json

import pytest

from archiver.cli import main
from archiver.testing import CrawlFn, Site

ROBOTS_DODGES = [
    "/%2e/private/f",
    "/public/%2e%2e/private/l",
    "/private%2Fe",
    "/%2E%2e/private/g",
    "/public/..%2Fprivate/g",  # issue 42 point 14: nginx serves /private/g
]
EXCLUDE_DODGES = ["/%70rivate/a", "/priv%61te/h", "/private%2fz", "/x/%2E%2E/private/b"]


def serve_private(site: Site, dodges: list[str]) -> None:
    site.page("/", links=[*dodges, "/public/ok"])
    site.page("/public/ok", "fine")
    for path in ("/private/f", "/private/l", "/private/e", "/private/g", "/private/a", "/private/h"):
        site.page(path, "secret")
    site.page("/private/z", "secret")
    site.page("/private/b", "secret")


def private_requests(site: Site) -> list[str]:
    return [path for path in site.hits if "private" in path.lower().replace("%2f", "/")]


def explained(archive: str, site: Site, dodges: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert main(["why", "--json", archive, *(site.url(path) for path in dodges)]) == 0
    answers: list[dict] = json.loads(capsys.readouterr().out)
    return answers


async def test_robots_txt_judges_the_normalized_path(
    site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    serve_private(site, ROBOTS_DODGES)
    site.page("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    crawl = await crawl_archive(site.url("/"), robots=True, max_tries=1)
    assert site.hits["/public/ok"] == 1
    assert private_requests(site) == []
    for answer in explained(str(crawl.archive), site, ROBOTS_DODGES, capsys):
        assert not answer["in_scope"], answer
        assert "Disallow: /private/" in answer["decided_by"], answer


async def test_exclude_judges_the_normalized_path(
    site: Site, crawl_archive: CrawlFn, capsys: pytest.CaptureFixture[str]
) -> None:
    serve_private(site, EXCLUDE_DODGES)
    crawl = await crawl_archive(site.url("/"), exclude=["/private/"], max_tries=1)
    assert site.hits["/public/ok"] == 1
    assert private_requests(site) == []
    for answer in explained(str(crawl.archive), site, EXCLUDE_DODGES, capsys):
        assert not answer["in_scope"], answer
        assert "exclude pattern '/private/'" in answer["decided_by"], answer


async def test_include_reads_the_normalized_path(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/d%6fcs/a", "/other/b"])
    site.page("/docs/a", "in")
    site.page("/other/b", "out")
    await crawl_archive(site.url("/"), include=["/docs/", r"/$"], max_tries=1)
    assert site.hits["/docs/a"] == 1
    assert site.hits["/other/b"] == 0
