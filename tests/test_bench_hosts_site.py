"""The many-hosts benchmark's server: its pages reach every expected URL, a response delay holds
each answer, and it counts what it served, so `bench_hosts --response-delay` measures a crawl
against the task bound of the requests it made."""

from __future__ import annotations

import asyncio
import re
import time
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient, TestServer

from bench import hosts_site


async def test_every_page_is_reached_and_each_response_waits_the_delay() -> None:
    delay = 0.2
    async with TestClient(TestServer(hosts_site.make_app(pages=8, response_delay=delay))) as client:
        seen, todo = {"/"}, ["/"]
        while todo:
            path = todo.pop()
            response = await client.get(path)
            assert response.status == 200, path
            for link in re.findall(r'href="([^"]+)"', await response.text()):
                if link not in seen:
                    seen.add(link)
                    todo.append(link)
        expected = {urlsplit(url).path for url in hosts_site.expected_urls(1, 8, 1000)}
        assert seen == expected
        for path in ("/robots.txt", "/style.css", "/p/1.html"):
            started = time.monotonic()
            response = await client.get(path)
            assert response.status == 200
            assert time.monotonic() - started >= delay, path
        missing = await client.get("/p/99.html")
        assert missing.status == 404
        served = await client.get(hosts_site.SERVED_PATH)
        assert await served.text() == str(len(expected) + 4)  # the crawl, the three above, the 404


async def test_busy_reading_counts_the_requests_held_at_once() -> None:
    delay = 0.2
    async with TestClient(TestServer(hosts_site.make_app(pages=8, response_delay=delay))) as client:
        await client.get(hosts_site.BUSY_PATH)
        await asyncio.gather(*(client.get(f"/p/{k}.html") for k in range(1, 5)))
        reading = await client.get(hosts_site.BUSY_PATH)
        seconds, first, last = (float(n) for n in (await reading.text()).split())
        assert last - first >= delay
        assert 3.0 <= seconds / (last - first) <= 4.0  # four at once, the whole span
        again = await client.get(hosts_site.BUSY_PATH)
        assert float((await again.text()).split()[1]) == 0.0  # no request since the last reading
