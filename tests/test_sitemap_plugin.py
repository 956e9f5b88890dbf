"""The bundled sitemap plugin: robots.txt `Sitemap:` lines, sitemaps, indexes, gzip."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins import sitemap

from archiver import ConfigError, Crawl, LinkKind, Page, testing
from archiver.config import load_config

ROOT = "http://example.org/"


def make_page(
    url: str,
    content: bytes = b"",
    *,
    content_type: str | None = "application/xml",
    status: int = 200,
    depth: int = 1,
) -> Page:
    headers = (("Content-Type", content_type),) if content_type is not None else ()
    return Page(url=url, status=status, headers=headers, content=content, encoding="utf-8", depth=depth)


make_crawl = functools.partial(testing.make_crawl, ROOT)


def urls(page: Page, crawl: Crawl | None = None) -> list[str]:
    found = sitemap.extract_links(page=page, crawl=crawl or make_crawl()) or []
    assert all(link.kind is LinkKind.PAGE for link in found)
    return [link.url for link in found]


def urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc><lastmod>2024-01-01</lastmod></url>" for loc in locs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    ).encode()


# -- discovery from the roots -----------------------------------------------------------------


def test_a_root_page_links_robots_txt_and_sitemap_xml_of_its_host() -> None:
    page = make_page("https://example.org:8443/deep/start.html", b"<html>", content_type="text/html", depth=0)
    crawl = make_crawl(robots=False)
    assert urls(page, crawl) == [
        "https://example.org:8443/robots.txt",
        "https://example.org:8443/sitemap.xml",
    ]


def test_with_robots_on_the_crawler_fetches_robots_txt_itself() -> None:
    page = make_page("https://example.org/", b"<html>", content_type="text/html", depth=0)
    assert urls(page, make_crawl(robots=True)) == ["https://example.org/sitemap.xml"]


def test_a_root_that_failed_still_leads_to_the_sitemaps() -> None:
    page = make_page(ROOT, b"gone", content_type="text/html", status=404, depth=0)
    crawl = make_crawl(robots=False)
    assert urls(page, crawl) == ["http://example.org/robots.txt", "http://example.org/sitemap.xml"]


def test_pages_below_the_root_add_nothing() -> None:
    assert urls(make_page(ROOT + "page.html", b"<html>", content_type="text/html")) == []


def test_discovery_can_be_turned_off() -> None:
    crawl = make_crawl(plugins={"sitemap": {"discover": False}})
    assert urls(make_page(ROOT, b"<html>", content_type="text/html", depth=0), crawl) == []


# -- robots.txt ------------------------------------------------------------------------------


def test_robots_txt_sitemap_lines_are_followed() -> None:
    robots = (
        b"User-agent: *\nDisallow: /private\n"
        b"Sitemap: http://example.org/sitemap_index.xml\n"
        b"  sitemap:/relative-sitemap.xml  \n"
        b"SITEMAP: https://cdn.example.net/s.xml.gz\n"
        b"Sitemap: ftp://example.org/not-http.xml\n"
        b"Sitemap: http://[::1\n"
        b"# Sitemap: http://example.org/commented.xml\n"
    )
    page = make_page(ROOT + "robots.txt", robots, content_type="text/plain")
    assert urls(page) == [
        "http://example.org/sitemap_index.xml",
        "http://example.org/relative-sitemap.xml",
        "https://cdn.example.net/s.xml.gz",
    ]


def test_an_error_robots_txt_is_not_read() -> None:
    page = make_page(ROOT + "robots.txt", b"Sitemap: /s.xml", content_type="text/plain", status=500)
    assert urls(page) == []


# -- sitemaps ----------------------------------------------------------------------------------


def test_a_sitemap_gives_its_locations() -> None:
    body = urlset(
        "http://example.org/a",
        "  http://example.org/b?x=1&amp;y=2  ",
        "<![CDATA[http://example.org/c]]>",
        "http://example.org/a",
        "javascript:alert(1)",
        "relative/page",
    )
    assert urls(make_page(ROOT + "sitemap.xml", body)) == [
        "http://example.org/a",
        "http://example.org/b?x=1&y=2",
        "http://example.org/c",
        "http://example.org/relative/page",
    ]


def test_a_sitemap_index_gives_its_sitemaps() -> None:
    body = (
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>http://example.org/s1.xml</loc></sitemap>"
        b"<sitemap><loc>http://example.org/s2.xml.gz</loc></sitemap></sitemapindex>"
    )
    assert urls(make_page(ROOT + "sitemap_index.xml", body, content_type="text/xml")) == [
        "http://example.org/s1.xml",
        "http://example.org/s2.xml.gz",
    ]


@pytest.mark.parametrize(
    "content_type", ["application/x-gzip", "application/gzip", "application/octet-stream"]
)
def test_a_gzip_sitemap_is_decompressed(content_type: str) -> None:
    body = gzip.compress(urlset("http://example.org/zipped"))
    page = make_page(ROOT + "s.xml.gz", body, content_type=content_type)
    assert urls(page) == ["http://example.org/zipped"]


def test_a_gzip_bomb_is_decompressed_only_up_to_max_size() -> None:
    head = urlset("http://example.org/first")[: -len(b"</urlset>")]
    bomb = gzip.compress(head + b" " * 20_000_000, compresslevel=9)
    assert len(bomb) < 100_000
    crawl = make_crawl(plugins={"sitemap": {"max_size": 1_000_000}})
    assert urls(make_page(ROOT + "bomb.xml.gz", bomb, content_type="application/gzip"), crawl) == [
        "http://example.org/first"
    ]
    assert len(sitemap.gunzip(bomb, 1_000_000) or b"") == 1_000_000


def test_corrupt_gzip_is_ignored() -> None:
    broken = gzip.compress(urlset("http://example.org/x"))[:30] + b"\x00garbage"
    assert urls(make_page(ROOT + "s.xml.gz", broken, content_type="application/gzip")) == []
    assert sitemap.gunzip(b"\x1f\x8bnot really", 1000) is None


def test_several_gzip_members_are_read() -> None:
    document = urlset("http://example.org/one", "http://example.org/two")
    half = len(document) // 2
    body = gzip.compress(document[:half]) + gzip.compress(document[half:])
    assert urls(make_page(ROOT + "s.xml.gz", body, content_type="application/gzip")) == [
        "http://example.org/one",
        "http://example.org/two",
    ]


def test_xml_that_is_not_a_sitemap_is_ignored() -> None:
    feed = b'<?xml version="1.0"?><rss><channel><loc>http://example.org/no</loc></channel></rss>'
    assert urls(make_page(ROOT + "feed.xml", feed)) == []
    assert urls(make_page(ROOT + "page.html", urlset("http://example.org/x"), content_type="text/html")) == []


def test_entities_are_never_expanded() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(b'<!ENTITY a%d "%s">' % (i, b"&a;" * 10) for i in range(1, 9))
        + b'<!ENTITY ext SYSTEM "file:///etc/passwd">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://example.org/&a8;</loc></url><url><loc>http://example.org/&ext;</loc></url>"
        b"<url><loc>http://example.org/ok</loc></url></urlset>"
    )
    found = urls(make_page(ROOT + "sitemap.xml", bomb))
    assert found[-1] == "http://example.org/ok"
    assert all(len(url) < 100 for url in found)


def test_locations_are_capped_at_max_links_per_page() -> None:
    body = urlset(*(f"http://example.org/p{i}" for i in range(5000)))
    found = urls(make_page(ROOT + "sitemap.xml", body), make_crawl(max_links_per_page=100))
    assert len(found) == 100


@pytest.mark.timeout(30)
def test_hostile_sitemaps_are_bounded() -> None:
    header = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    for body in (
        header + b"<loc>" * 500_000,
        header + b"<loc><![CDATA[" * 300_000,
        header + b"\x00" * 2_000_000,
    ):
        urls(make_page(ROOT + "sitemap.xml", body))


# -- configuration ---------------------------------------------------------------------------


def test_configure_rejects_unknown_keys_with_a_suggestion() -> None:
    config = load_config(None, {"plugins": {"sitemap": {"max_sise": 1}}})
    with pytest.raises(ConfigError, match=r"max_sise.*did you mean 'max_size'"):
        sitemap.configure(config=config)


@pytest.mark.parametrize(("key", "value"), [("max_size", 0), ("max_size", "big"), ("discover", "yes")])
def test_configure_rejects_wrong_values(key: str, value: object) -> None:
    config = load_config(None, {"plugins": {"sitemap": {key: value}}})
    with pytest.raises(ConfigError, match=rf"\[plugins\.sitemap\] {key}: "):
        sitemap.configure(config=config)


# -- end to end ----------------------------------------------------------------------------


@pytest.mark.parametrize("robots", [False, True])
async def test_a_crawl_finds_pages_only_listed_in_sitemaps(
    site: Any, crawl_archive: Any, robots: bool
) -> None:
    site.page("/", links=["/linked.html"])
    site.page("/linked.html", "<p>linked</p>")
    site.page("/robots.txt", f"User-agent: *\nSitemap: {site.url('/index.xml')}\n", content_type="text/plain")
    site.page(
        "/index.xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/pages.xml.gz')}</loc></sitemap></sitemapindex>",
        content_type="application/xml",
    )
    site.page(
        "/pages.xml.gz",
        gzip.compress(urlset(site.url("/hidden.html"), site.url("/linked.html"))),
        content_type="application/x-gzip",
    )
    site.page("/hidden.html", "<p>only in the sitemap</p>")
    crawl = await crawl_archive(site.url("/"), plugins=("links", "sitemap"), robots=robots)
    for path in ("/robots.txt", "/sitemap.xml", "/index.xml", "/pages.xml.gz", "/hidden.html"):
        assert site.hits[path] == 1, path
    assert site.hits["/linked.html"] == 1
    assert crawl.stats["sitemap.urls"] == 3


PUBLIC = ("archiver.api",)


def test_the_plugin_uses_only_the_public_api() -> None:
    source = Path(sitemap.__file__).read_text(encoding="utf-8")
    imports = [line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))]
    internal = [name for name in imports if name.startswith("archiver.") and name not in PUBLIC]
    assert internal == []
