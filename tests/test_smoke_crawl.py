"""The crawl fixtures work end to end (a first smoke test of the engine)."""

from archiver.testing import CrawlFn, Site


async def test_crawl_follows_links(site: Site, crawl_archive: CrawlFn) -> None:
    site.page("/", links=["/a", "/b"])
    site.page("/a", links=["/b", "/"])
    site.page("/b", links=[])
    crawl = await crawl_archive(site.url("/"))
    assert crawl.stats["pages"] == 3
    assert site.hits == {"/": 1, "/a": 1, "/b": 1}
    assert (crawl.archive / "crawl-log.jsonl").exists()
    assert (crawl.archive / "report.json").exists()
