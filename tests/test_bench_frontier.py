"""The frontier benchmark's link models: every page reached, 20 links a page, sites link within."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.frontier import MemoryFrontier
from bench import bench_frontier

REPOSITORY = Path(__file__).resolve().parents[1]


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


def test_repeated_runs_are_summed_up_by_their_medians() -> None:
    runs = [
        {"us_per_page": 70.0, "cpu_us_per_page": 69.0, "peak_rss_mb": 34.0},
        {"us_per_page": 90.0, "cpu_us_per_page": 60.0, "peak_rss_mb": 36.0},
        {"us_per_page": 75.0, "cpu_us_per_page": 65.0, "peak_rss_mb": 35.0},
    ]
    assert bench_frontier.median_run(runs) == {
        "us_per_page": 75.0,
        "cpu_us_per_page": 65.0,
        "peak_rss_mb": 36.0,
    }


def test_repeat_runs_each_size_in_rounds_and_reports_the_medians() -> None:
    command = [sys.executable, "-m", "bench.bench_frontier", "--sizes", "300", "600", "--kinds", "sqlite"]
    out = subprocess.run(
        [*command, "--repeat", "2"], capture_output=True, text=True, timeout=120, check=True, cwd=REPOSITORY
    )
    lines = out.stdout.splitlines()
    runs = [match.groups() for line in lines if (match := re.match(r"run (\d+): sqlite +(\d+) URLs", line))]
    assert runs == [("1", "300"), ("1", "600"), ("2", "300"), ("2", "600")]
    assert sum(line.startswith("median of 2: sqlite") for line in lines) == 2
    assert any(line.startswith("sqlite cost per URL 600 vs 300 URLs") for line in lines)
