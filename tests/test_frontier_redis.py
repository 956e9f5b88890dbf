"""The Redis frontier against a real redis-server: atomic adds, leases, politeness, failures."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.redis.frontier import FrontierLostError, FrontierUnavailableError, RedisFrontier
from redis_support import RedisServer, free_port, redis_server

from archiver.cli import main
from archiver.config import load_config
from archiver.frontier import Item
from archiver.model import LinkKind
from archiver.testing import CrawlFn, Site
from archiver.urls import canonical_key

__all__ = ["redis_server"]

Factory = Callable[..., RedisFrontier]


@pytest.fixture
async def frontiers(redis_server: RedisServer) -> AsyncIterator[Factory]:
    """`make(lease_seconds, **config)` -> an opened frontier of crawl 't' (one per simulated worker)."""
    opened: list[RedisFrontier] = []

    async def make(lease_seconds: float = 30.0, **overrides: Any) -> RedisFrontier:
        redis = {"crawl_id": "t", "lease_seconds": lease_seconds}
        values = {"frontier": redis_server.url, "delay": 0.0, **overrides, "plugins": {"redis": redis}}
        frontier = RedisFrontier(load_config(None, values))
        await frontier.open()
        opened.append(frontier)
        return frontier

    yield make  # type: ignore[misc]
    for frontier in opened:
        await frontier.close()


def entries(*urls: str) -> list[tuple[str, Item]]:
    return [(canonical_key(url), Item(url)) for url in urls]


async def test_add_is_atomic_across_workers(frontiers: Factory) -> None:
    a, b = await frontiers(), await frontiers()
    urls = [f"http://h.test/{i}" for i in range(200)]
    results = await asyncio.gather(*(w.add(entries(*urls)) for w in (a, b, a, b)))
    new_per_url = [sum(flags) for flags in zip(*results, strict=True)]
    assert new_per_url == [1] * len(urls)
    counts = await a.counts()
    assert (counts.queued, counts.seen, counts.in_flight) == (200, 200, 0)


async def test_item_round_trips_and_crawl_ends_when_no_lease_is_left(frontiers: Factory) -> None:
    a, b = await frontiers(), await frontiers()
    item = Item("http://h.test/x?q=1", depth=3, redirects_left=2, referrer="http://h.test/")
    await a.add([(canonical_key(item.url), item)])
    got = await a.get()
    assert got == item
    # b must wait: the queue is empty but a holds a lease that may add more.
    waiting = asyncio.create_task(b.get())
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await a.add(entries("http://h.test/next"))
    second = await asyncio.wait_for(waiting, 5)
    assert second is not None and second.url == "http://h.test/next"
    await a.done(got)
    await b.done(second)
    assert await asyncio.wait_for(a.get(), 5) is None
    assert await asyncio.wait_for(b.get(), 5) is None
    counts = await a.counts()
    assert (counts.done, counts.queued, counts.in_flight) == (2, 0, 0)


async def test_expired_lease_is_taken_over_and_the_late_done_does_not_count(frontiers: Factory) -> None:
    dead, alive = await frontiers(lease_seconds=1.0), await frontiers(lease_seconds=1.0)
    await dead.add(entries("http://h.test/a"))
    item = await dead.get()
    assert item is not None
    assert dead._renewer is not None
    dead._renewer.cancel()  # the worker stops renewing: as good as dead
    started = time.monotonic()
    again = await asyncio.wait_for(alive.get(), 10)
    assert again == item
    assert time.monotonic() - started >= 0.5
    await dead.done(item)  # presumed dead: refused
    assert dead.lost_leases == 1
    await alive.done(again)
    counts = await alive.counts()
    assert (counts.done, counts.in_flight, counts.queued) == (1, 0, 0)
    assert await asyncio.wait_for(alive.get(), 5) is None


async def test_renewed_leases_outlive_their_first_deadline(frontiers: Factory) -> None:
    holder, other = await frontiers(lease_seconds=1.0), await frontiers(lease_seconds=1.0)
    await holder.add(entries("http://h.test/slow"))
    item = await holder.get()
    assert item is not None
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(other.get(), 2.5)
    await holder.done(item)
    assert holder.lost_leases == 0


async def test_per_host_concurrency_is_global(frontiers: Factory) -> None:
    a, b, c = [await frontiers(per_host_concurrency=2) for _ in range(3)]
    await a.add(entries(*(f"http://busy.test/{i}" for i in range(6)), "http://other.test/"))
    first = await asyncio.wait_for(a.get(), 5)
    second = await asyncio.wait_for(b.get(), 5)
    other = await asyncio.wait_for(c.get(), 5)
    assert first is not None and second is not None and other is not None
    assert sorted(i.url.split("/")[2] for i in (first, second, other)) == [
        "busy.test",
        "busy.test",
        "other.test",
    ]
    # busy.test has its two leases (held by two processes): nobody gets a third.
    for worker in (a, b, c):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(worker.get(), 0.5)
    holder = a if "busy" in first.url else b
    done = first if holder is a else second
    await holder.done(done)  # frees a slot; the next lease rides on this round trip
    follower = await asyncio.wait_for(holder.get(), 5)
    assert follower is not None and "busy.test" in follower.url


async def test_delay_spaces_leases_of_one_host_across_workers(frontiers: Factory) -> None:
    a, b = await frontiers(delay=0.3), await frontiers(delay=0.3)
    await a.add(entries(*(f"http://slow.test/{i}" for i in range(4))))
    stamps = []
    for worker in (a, b, a, b):
        got = await asyncio.wait_for(worker.get(), 5)
        assert got is not None
        stamps.append(time.monotonic())
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
    assert min(gaps) >= 0.25, gaps


async def test_global_max_pages(frontiers: Factory) -> None:
    a, b = await frontiers(max_pages=5), await frontiers(max_pages=5)
    flags = await asyncio.gather(
        a.add(entries(*(f"http://h.test/a{i}" for i in range(4)))),
        b.add(entries(*(f"http://h.test/b{i}" for i in range(4)))),
    )
    assert sum(sum(f) for f in flags) == 5


async def test_unreachable_redis_is_one_clear_error() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    frontier = RedisFrontier(load_config(None, {"frontier": url, "plugins": {"redis": {"crawl_id": "x"}}}))
    with pytest.raises(FrontierUnavailableError, match=r"cannot reach the Redis frontier at redis://127"):
        await frontier.open()
    await frontier.close()


def test_crawl_id_is_required() -> None:
    with pytest.raises(Exception, match="crawl-id"):
        RedisFrontier(load_config(None, {"frontier": "redis://127.0.0.1:1/0"}))


def test_without_the_redis_client_the_error_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if installed without the redis extra
    args = ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "a"), "--crawl-id", "c", "-q"]
    code = main([*args, "--frontier", "redis://127.0.0.1:1/0", "--plugin", "archiver_plugins.redis"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [
        "archiver: error: a Redis frontier needs the redis client, which is not installed:"
        " pip install 'redis>=5.0' (the redis extra)"
    ]


def test_hook_make_frontier_without_a_plugin_the_url_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "a"), "--crawl-id", "c", "-q"]
    code = main([*args, "--frontier", "redis://127.0.0.1:1/0", "--disable-plugin", "redis"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [
        "archiver: error: frontier 'redis://127.0.0.1:1/0': no plugin provides it"
        " (`archiver plugins` lists those loaded)"
    ]


def test_cli_names_the_unreachable_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    archive = str(tmp_path / "a")
    code = main(["crawl", "http://127.0.0.1:9/", "-o", archive, "--frontier", url, "--crawl-id", "c", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err == [f"archiver: error: cannot reach the Redis frontier at {url}: {err[0].split(': ', 3)[-1]}"]
    assert "Connect" in err[0] or "refused" in err[0]


async def test_redis_lost_mid_crawl_stops_with_a_message(
    redis_server: RedisServer, frontiers: Factory
) -> None:
    frontier = await frontiers()
    await frontier.add(entries("http://h.test/"))
    frontier.retry_window = 1.5
    redis_server.stop()
    started = time.monotonic()
    with pytest.raises(FrontierLostError, match=r"lost the Redis frontier .* run the worker again"):
        await frontier.add(entries("http://h.test/more"))
    assert 1.0 <= time.monotonic() - started < 20


async def test_redis_back_within_the_window_is_a_pause(redis_server: RedisServer, frontiers: Factory) -> None:
    frontier = await frontiers()
    client = redis_server.client()
    client.save()  # the server comes back with the crawl, as a persistent one would
    client.close()
    redis_server.stop()

    async def restart() -> None:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(redis_server.start)

    restarting = asyncio.create_task(restart())
    flags = await frontier.add(entries("http://h.test/after"))
    await restarting
    assert flags == [True]


async def test_crawl_through_redis_matches_a_memory_crawl(
    site: Site, crawl_archive: CrawlFn, redis_server: RedisServer, tmp_path: Path
) -> None:
    for i in range(30):
        site.page(f"/p{i}", links=[f"/p{(i * 7 + 1) % 30}", f"/p{(i + 1) % 30}", "/go"])
    site.redirect("/go", "/p3")
    site.page("/", links=["/p0", "/missing"])
    crawl = await crawl_archive(
        site.url("/"),
        plugins=("links", "redis"),
        frontier=redis_server.url,
        plugin_tables={"redis": {"crawl_id": "one"}},
    )
    assert crawl.complete
    assert set(site.hits) == {"/", "/missing", "/go", *(f"/p{i}" for i in range(30))}
    assert max(site.hits.values()) == 1
    client = redis_server.client()
    try:
        counts = client.hgetall("archiver:{one}:counts")
        assert int(counts["done"]) + int(counts.get("failed", 0)) == 33
        assert int(counts["queued"]) == 0
        assert client.zcard("archiver:{one}:leases") == 0
    finally:
        client.close()


async def test_close_while_a_renewal_is_in_flight_returns(redis_server: RedisServer) -> None:
    """Regression: a cancellation landing inside the client's call used to be swallowed,
    so the renewal loop went on and `close()` waited for it forever."""
    redis = {"crawl_id": "c", "lease_seconds": 1.0}
    config = load_config(None, {"frontier": redis_server.url, "plugins": {"redis": redis}})
    for i in range(60):
        frontier = RedisFrontier(config)
        frontier.lease_seconds = 0.003  # renew every millisecond: close() often lands mid-call
        await frontier.open()
        await asyncio.sleep(0.001 * (i % 15))
        renewer = frontier._renewer
        await asyncio.wait_for(frontier.close(), 5)
        await asyncio.sleep(0)
        assert renewer is not None and renewer.done()


def test_redis_out_of_memory_at_the_start_is_one_line(
    redis_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42 point 12: a Redis at its maxmemory refused the crawl's first writes with a
    70-line traceback; it is one line, and nothing of the crawl is left in Redis."""
    client = redis_server.client()
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", str(used))
    try:
        archive = str(tmp_path / "a")
        args = [
            "crawl",
            "http://127.0.0.1:9/",
            "-o",
            archive,
            "--frontier",
            redis_server.url,
            "--crawl-id",
            "oom",
        ]
        code = main([*args, "-q"])
    finally:
        client.config_set("maxmemory", "0")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1, err
    assert err == [
        f"archiver: error: the Redis frontier at {redis_server.url} refused to start the crawl:"
        " command not allowed when used memory > 'maxmemory'."
    ]
    assert not client.keys("archiver:{oom}:*")


async def test_requisites_go_first_in_their_hosts_queue_and_a_url_given_back_keeps_its_tries(
    frontiers: Factory,
) -> None:
    a = await frontiers(per_host_concurrency=1)
    pages = [Item(f"http://h.test/p{i}") for i in range(3)]
    requisites = [Item(f"http://h.test/r{i}.css", kind=LinkKind.REQUISITE) for i in range(2)]
    await a.add([(canonical_key(item.url), item) for item in [*pages, *requisites]])
    first = await a.get()
    assert first == requisites[0]
    assert await a.give_back(first, Item(first.url, kind=LinkKind.REQUISITE, tries=2))
    again = await a.get()
    assert again is not None and (again.url, again.tries) == (first.url, 2)
    order = [again.url]
    await a.done(again)
    for _ in range(4):
        item = await asyncio.wait_for(a.get(), 5)
        assert item is not None
        order.append(item.url)
        await a.done(item)
    assert order == [item.url for item in [*requisites, *pages]]
    counts = await a.counts()
    assert (counts.done, counts.queued, counts.in_flight) == (5, 0, 0)
