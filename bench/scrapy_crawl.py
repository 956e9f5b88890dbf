# mypy: disable-error-code="import-not-found"
"""Crawl a site with a Scrapy CrawlSpider that follows every link, as a Scrapy user would.

Run by bench.run with the Python of a separate virtual environment that has Scrapy (so Twisted
stays out of archiver's own environment):

    python bench/scrapy_crawl.py ROOT_URL OUT.json --concurrency 100

The LinkExtractor also takes `img`, `link` and `script` sources and no extension is denied, so
Scrapy fetches page requisites too, as wget and archiver do (it does not read srcset or CSS).
Every HTTP exchange the downloader completes (3xx and 4xx included) is written to OUT.json.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, ClassVar
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import Request, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("out")
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    fetched: dict[str, int] = {}

    class SiteSpider(CrawlSpider):  # type: ignore[misc]
        name = "site"
        allowed_domains: ClassVar[list[str | None]] = [urlsplit(args.root).hostname]
        start_urls: ClassVar[list[str]] = [args.root]
        rules = (
            Rule(
                LinkExtractor(
                    tags=("a", "area", "img", "link", "script"),
                    attrs=("href", "src"),
                    deny_extensions=[],
                ),
                follow=True,
            ),
        )

        @classmethod
        def from_crawler(cls, crawler: Any, *a: Any, **kw: Any) -> SiteSpider:
            spider: SiteSpider = super().from_crawler(crawler, *a, **kw)
            crawler.signals.connect(record, signal=signals.response_downloaded)
            return spider

    def record(response: Response, request: Request, spider: Any) -> None:
        fetched[response.url] = response.status

    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "DOWNLOAD_DELAY": 0,
            "AUTOTHROTTLE_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
            "REMOTE_CONTROL_ENABLED": False,
            "LOG_LEVEL": "INFO",
        }
    )
    crawler = process.create_crawler(SiteSpider)
    started = time.perf_counter()
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    result = {
        "wall_seconds": time.perf_counter() - started,
        "urls": fetched,
        "stats": {k: v if isinstance(v, int | float | str) else str(v) for k, v in stats.items()},
    }
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
