# mypy: disable-error-code="import-not-found"
"""Crawl many hosts with Scrapy at archiver's default politeness, as the reference of bench_hosts.

Run with the Python of Scrapy's own virtual environment (bench.tools.scrapy_python):

    python bench/scrapy_hosts.py ROOTS_FILE OUT.json --delay 0.25 --per-host 4 --concurrency 10

robots.txt obeyed, DOWNLOAD_DELAY and CONCURRENT_REQUESTS_PER_DOMAIN as archiver's gap and
slots per host, CONCURRENT_REQUESTS as its tasks; Scrapy's other defaults kept (the delay is
randomized between 0.5 and 1.5 times DOWNLOAD_DELAY, as a Scrapy user gets it).  Follows
`a` and `link` sources within each root's host.  Every completed exchange goes to OUT.json.
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
    parser.add_argument("roots")
    parser.add_argument("out")
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    with open(args.roots) as handle:
        roots = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    fetched: dict[str, int] = {}

    class HostsSpider(CrawlSpider):  # type: ignore[misc]
        name = "hosts"
        allowed_domains: ClassVar[list[str]] = sorted({urlsplit(r).hostname or "" for r in roots})
        start_urls: ClassVar[list[str]] = roots
        rules = (Rule(LinkExtractor(tags=("a", "link"), attrs=("href",), deny_extensions=[]), follow=True),)

        @classmethod
        def from_crawler(cls, crawler: Any, *a: Any, **kw: Any) -> HostsSpider:
            spider: HostsSpider = super().from_crawler(crawler, *a, **kw)
            crawler.signals.connect(record, signal=signals.response_downloaded)
            return spider

    def record(response: Response, request: Request, spider: Any) -> None:
        fetched[response.url] = response.status

    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": True,
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host,
            "DOWNLOAD_DELAY": args.delay,
            "AUTOTHROTTLE_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "WARNING",
        }
    )
    crawler = process.create_crawler(HostsSpider)
    started = time.perf_counter()
    process.crawl(crawler)
    process.start()
    result = {"wall_seconds": time.perf_counter() - started, "urls": fetched}
    with open(args.out, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
