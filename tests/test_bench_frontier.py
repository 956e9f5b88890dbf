"""The frontier benchmark's link models: every page reached, 20 links a page, sites link within."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from archiver.frontier import MemoryFrontier
from bench import bench_frontier


@pytest.fixture
def model() -> Iterator[None]:
    saved = bench_frontier.HOSTS, bench_frontier.LINKS
    yield
    bench_frontier.HOSTS, bench_frontier.LINKS = saved


@pytest.mark.parametrize("links", ["site", "uniform"])
@pytest.mark.parametrize(("size", "hosts"), [(2000, 1), (2000, 7), (2000, 2000), (3000, 100)])
async def test_every_page_is_crawled_once(model: None, links: str, size: int, hosts: int) -> None:
    bench_frontier.HOSTS, bench_frontier.LINKS = hosts, links
    pages, _, _ = await bench_frontier.crawl(MemoryFrontier(), size)
    assert pages == size
    counts = {len(bench_frontier.targets(n, size)) for n in range(size)}
    # uniform: page n + 1 may also be one of the 19 others
    assert counts == {20} if links == "site" else counts <= {19, 20}


def test_a_site_links_mostly_within_its_host_and_repeats_its_navigation(model: None) -> None:
    bench_frontier.HOSTS, bench_frontier.LINKS = 100, "site"
    size = 10_000
    same_host = [sum(t % 100 == n % 100 for t in bench_frontier.targets(n, size)) for n in range(size)]
    assert min(same_host) >= 17
    navigation = {t for t in range(size) if t // 100 < bench_frontier.NAVIGATION}
    assert all(navigation & bench_frontier.targets(n, size) for n in range(size))
    assert all(
        len({t for t in bench_frontier.targets(n, size) if t % 100 == 42} & navigation) == 8
        for n in range(42, size, 100)
    )
