"""Several crawler processes sharing one Redis frontier, and `archiver merge`.

Real subprocesses (`python -m archiver crawl|worker|merge|search|export`) against a
generated site served by this test's event loop, with a real redis-server.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from archiver_plugins.archive_reader.reader import open_archive
from redis_support import RedisServer, redis_server

from archiver.manager import make_plugin_manager
from archiver.testing import CrawlFn, Site

__all__ = ["redis_server"]

CRAWLERS = [
    "--plugin",
    "archiver_plugins.links",
    "--plugin",
    "archiver_plugins.warc",
    "--plugin",
    "archiver_plugins.redis",
]
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron"]


def build_site(site: Site, pages: int, delay: float = 0.0) -> set[str]:
    """Page i links to its 4 children, its parent and one far page; some redirects and 404s.

    Returns the paths a complete crawl fetches."""
    expected = set()

    def add(path: str, links: list[str], words: str) -> None:
        body = (
            f"<!doctype html><html><head><title>{path}</title></head><body><p>{words}</p>"
            + "".join(f'<a href="{link}">{link}</a>' for link in links)
            + "</body></html>"
        )
        data = body.encode()

        async def serve(request: web.Request) -> web.StreamResponse:
            if delay:
                await asyncio.sleep(delay)
            return web.Response(body=data, content_type="text/html", charset="utf-8")

        site.handler(path, serve)
        expected.add(path)

    for i in range(pages):
        links = [f"/p/{c}" for c in range(4 * i + 1, 4 * i + 5) if c < pages]
        links += [f"/p/{(i - 1) // 4}" if i else "/p/1", f"/p/{(i * 37 + 11) % pages}"]
        if i % 50 == 7:
            links.append(f"/r/{i}")
            site.redirect(f"/r/{i}", f"/p/{(i * 13) % pages}")
            expected.add(f"/r/{i}")
        if i % 100 == 3:
            links.append(f"/missing/{i}")
            expected.add(f"/missing/{i}")
        add(f"/p/{i}", links, f"page{i} {WORDS[i % len(WORDS)]} word{i}")
    site.redirect("/", "/p/0")
    expected.add("/")
    return expected


def captures(archive: Path) -> list[tuple[str, int]]:
    """(path, status) of every response (or revisit) record in the archive's WARC files."""
    folder = archive / "warc"
    if not folder.is_dir():
        return []
    found = []
    for capture in open_archive(folder).iter_captures():
        if capture.status is not None:
            found.append((urlsplit(capture.url).path, capture.status))
    return found


def write_config(path: Path, per_host_concurrency: int = 64, lease_seconds: float = 30, **crawl: Any) -> Path:
    values = {"max_tasks": 8, "max_tries": 2, "timeout": 20.0, **crawl}
    lines = ["[crawl]"] + [f"{k} = {json.dumps(v)}" for k, v in values.items() if k != "timeout"]
    lines += ["[limits]", f"timeout = {values['timeout']}"]
    lines += [
        "[politeness]",
        "delay = 0.0",
        "robots = false",
        f"per_host_concurrency = {per_host_concurrency}",
    ]
    lines += ["[plugins.redis]", f"lease_seconds = {lease_seconds}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def crawler_env() -> dict[str, str]:
    return {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONUNBUFFERED": "1"}


async def start(args: Sequence[str], log: Path) -> asyncio.subprocess.Process:
    handle = log.open("wb")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "archiver",
            *args,
            stdout=handle,
            stderr=asyncio.subprocess.STDOUT,
            env=crawler_env(),
        )
    finally:
        handle.close()


async def run(args: Sequence[str], seconds: float = 60) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=os.environ.copy(),
    )
    out, _ = await asyncio.wait_for(process.communicate(), seconds)
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace")


async def wait_for_crawl(server: RedisServer, crawl_id: str) -> None:
    """Until `archiver crawl` has stored the crawl's configuration (workers read it)."""
    client = server.client()
    deadline = time.monotonic() + 20
    try:
        while not client.exists(f"archiver:{{{crawl_id}}}:config"):
            assert time.monotonic() < deadline, "the seeding crawl did not start"
            await asyncio.sleep(0.05)
    finally:
        client.close()


async def launch(
    server: RedisServer, root: str, archives: list[Path], config: Path, crawl_id: str
) -> list[asyncio.subprocess.Process]:
    """`archiver crawl` into archives[0], then `archiver worker` into each other archive."""
    shared = ["--frontier", server.url, "--crawl-id", crawl_id]
    first = await start(
        ["crawl", root, "-o", str(archives[0]), "-c", str(config), *shared, *CRAWLERS, "-q"],
        archives[0].with_suffix(".log"),
    )
    await wait_for_crawl(server, crawl_id)
    processes = [first]
    for archive in archives[1:]:
        processes.append(
            await start(["worker", "-o", str(archive), *shared, *CRAWLERS, "-q"], archive.with_suffix(".log"))
        )
    return processes


async def finish(processes: list[asyncio.subprocess.Process], logs: list[Path], seconds: float) -> None:
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), seconds)
    for code, log in zip(codes, logs, strict=True):
        assert code == 0, f"{log.name} exited with {code}:\n{log.read_text(errors='replace')[-3000:]}"


@pytest.mark.timeout(180)
async def test_three_processes_fetch_each_url_once_and_match_one_process(
    site: Site, crawl_archive: CrawlFn, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 2000)
    single = await crawl_archive(site.url("/"), plugins=("links", "warc"), max_tasks=16)
    single_set = set(captures(single.archive))
    assert {path for path, _ in single_set} == expected
    site.hits.clear()

    archives = [tmp_path / f"w{n}" for n in range(3)]
    config = write_config(tmp_path / "crawl.toml")
    processes = await launch(redis_server, site.url("/"), archives, config, "three")
    await finish(processes, [a.with_suffix(".log") for a in archives], 120)

    per_process = [captures(archive) for archive in archives]
    union = [record for records in per_process for record in records]
    assert set(union) == single_set
    duplicates = [path for path, n in collections.Counter(p for p, _ in union).items() if n > 1]
    assert duplicates == []
    assert max(site.hits.values()) == 1 and set(site.hits) == expected
    assert all(records for records in per_process), [len(r) for r in per_process]

    client = redis_server.client()
    try:
        counts = client.hgetall("archiver:{three}:counts")
        assert int(counts["queued"]) == 0 and client.zcard("archiver:{three}:leases") == 0
        assert int(counts["done"]) + int(counts.get("failed", 0)) == len(expected)
        assert "lost" not in counts
    finally:
        client.close()

    code, out = await run(["status", str(archives[1])])
    assert code == 0, out
    assert "complete" in out.splitlines()[0]
    assert f"done {len(expected):,}, queued 0" in out
    code, out = await run(["status", str(archives[2]), "--json"])
    status = json.loads(out)
    assert (status["state"], status["frontier"], status["done"]) == ("complete", "redis", len(expected))
    assert status["shared"]["crawl_id"] == "three" and status["shared"]["workers"] == []


@pytest.mark.timeout(180)
async def test_workers_on_one_host_each_fetch_a_fair_share(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    """A crawl and two workers, one host, the default 4 slots per host: none starves."""
    expected = build_site(site, 400, delay=0.01)
    client = redis_server.client()

    async def root_once_all_joined(request: web.Request) -> web.StreamResponse:
        # The crawl starts first; its first page waits for the two workers to join.
        for _ in range(1200):
            if client.hlen("archiver:{fair}:workers") >= 3:
                break
            await asyncio.sleep(0.05)
        raise web.HTTPFound("/p/0")

    site.handler("/", root_once_all_joined)
    archives = [tmp_path / f"w{n}" for n in range(3)]
    config = write_config(tmp_path / "crawl.toml", per_host_concurrency=4, max_tasks=8)
    try:
        processes = await launch(redis_server, site.url("/"), archives, config, "fair")
        await finish(processes, [a.with_suffix(".log") for a in archives], 150)
    finally:
        client.close()
    fetched = [len(captures(archive)) for archive in archives]
    assert sum(fetched) == len(expected)
    # A fair third each on an idle machine; on a loaded one the scheduler skews it (18% seen),
    # while a starved worker (a host's slots held by the others) gets next to nothing.
    assert min(fetched) >= 0.1 * len(expected), fetched


@pytest.mark.timeout(180)
async def test_a_killed_worker_leases_are_finished_by_the_others(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 600, delay=0.02)
    archives = [tmp_path / f"w{n}" for n in range(3)]
    config = write_config(tmp_path / "crawl.toml", lease_seconds=3, max_tasks=6)
    processes = await launch(redis_server, site.url("/"), archives, config, "kill")
    victim = processes[2]
    # Kill the worker while it holds leases: once it has done some pages.
    client = redis_server.client()
    try:
        deadline = time.monotonic() + 60
        while True:
            workers = {json.loads(v)["pid"]: json.loads(v) for v in client.hvals("archiver:{kill}:workers")}
            owners = client.hvals("archiver:{kill}:owner")
            if sum(f"-{victim.pid}-" in owner for owner in owners) >= 2 and victim.pid in workers:
                break
            assert time.monotonic() < deadline, "the worker never held leases"
            await asyncio.sleep(0.02)
        held = [o for o in client.hvals("archiver:{kill}:owner") if f"-{victim.pid}-" in o]
        victim.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(victim.wait(), 10) == -signal.SIGKILL
        await finish(processes[:2], [a.with_suffix(".log") for a in archives[:2]], 120)
        counts = client.hgetall("archiver:{kill}:counts")
        assert int(counts["requeued"]) >= 1, (counts, held)
        assert int(counts["queued"]) == 0 and client.zcard("archiver:{kill}:leases") == 0
        assert int(counts["done"]) + int(counts.get("failed", 0)) == len(expected)
    finally:
        client.close()
    union = [record for archive in archives for record in captures(archive)]
    assert {path for path, _ in union} == expected
    # Only what the victim had in flight can have been fetched twice.
    twice = [path for path, n in site.hits.items() if n > 1]
    assert len(twice) <= 6, twice
    assert set(site.hits) == expected

    # The victim's WARC file was left open; the merged archive has it closed and indexed.
    from archiver.merge import merge_archives

    warc_only = make_plugin_manager(
        autoload=False, modules=["archiver_plugins.warc", "archiver_plugins.redis"]
    )
    merged = tmp_path / "merged"
    merge_archives(archives, merged, plugin_manager=warc_only)
    assert not list((merged / "warc").glob("*.open"))
    assert {path for path, _ in captures(merged)} == expected
    assert all(p.with_suffix("").with_suffix(".cdxj").is_file() for p in (merged / "warc").glob("*.warc.gz"))

    # The victim wrote no report: the merged one takes the shared crawl's own counts and state.
    report = json.loads((merged / "report.json").read_text())
    assert report["without_report"] == [str(archives[2])]
    assert report["complete"] is True and report["shared"]["complete"] is True
    assert report["pages"] + report["failed"] == len(expected), report
    code, out = await run(["status", str(merged)])
    assert code == 0 and out.splitlines()[0].endswith("complete"), out


@pytest.mark.timeout(180)
async def test_merge_gives_one_archive_for_search_and_export(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 120)
    archives = [tmp_path / f"w{n}" for n in range(2)]
    config = write_config(tmp_path / "crawl.toml", max_tasks=4)
    processes = await launch(redis_server, site.url("/"), archives, config, "merge")
    await finish(processes, [a.with_suffix(".log") for a in archives], 120)
    merged = tmp_path / "merged"
    code, out = await run(["merge", *map(str, archives), "-o", str(merged)])
    assert code == 0, out
    assert "Merged 2 archives" in out
    assert sorted(p for p, _ in captures(merged)) == sorted(expected)
    lines = (merged / "index.cdxj").read_text().splitlines()
    assert lines == sorted(lines) and len(lines) == len(expected)

    code, out = await run(["search", str(merged), "word117", "--json"])
    assert code == 0, out
    assert "/p/117" in out
    code, out = await run(["search", str(merged), "garnet", "--json"])
    assert code == 0 and out.count("/p/") >= 10, out

    if make_plugin_manager().has_plugin("mirror"):
        code, out = await run(["export", str(merged), str(tmp_path / "site")], seconds=120)
        assert code == 0, out
        exported = {p.name for p in (tmp_path / "site").rglob("*.html")}
        assert len(exported) >= 100, sorted(exported)[:5]

    code, again = await run(["merge", *map(str, archives), "-o", str(merged), "--json"])
    assert code == 0, again
    second = json.loads(again)
    assert (second["linked"], second["copied"]) == (0, 0) and second["already"] >= 1

    # The merged archive's crawl.toml describes it: its own folder, no frontier to resume.
    saved = tomllib.loads((merged / "crawl.toml").read_text())
    assert saved["crawl"]["output"] == str(merged) and saved["crawl"]["frontier"] == "memory"
    report = json.loads((merged / "report.json").read_text())
    assert report["shared"]["crawl_id"] == "merge" and report["complete"] is True

    # The crawl id is finished: running the crawl again says so and fetches nothing.
    site.hits.clear()
    shared = ["--frontier", redis_server.url, "--crawl-id", "merge", *CRAWLERS]
    code, out = await run(["crawl", site.url("/"), "-o", str(tmp_path / "again"), "-c", str(config), *shared])
    assert code == 2 and "crawl 'merge'" in out and "is finished" in out and "Traceback" not in out, out
    cleanup = f"redis-cli -u {redis_server.url} --scan --pattern 'archiver:{{merge}}:*'"
    assert f"{cleanup} | xargs redis-cli -u {redis_server.url} del" in out, out  # the crawl's Redis
    code, out = await run(["worker", "-o", str(tmp_path / "late"), *shared])
    assert code == 0 and "is finished" in out, out
    assert not site.hits


async def test_hook_archive_merged(tmp_path: Path) -> None:
    """The hook is called with the merged folder and the sources, after the WARC files moved."""
    from archiver.hookspecs import hookimpl
    from archiver.merge import merge_archives

    calls: list[tuple[Path, list[Path]]] = []

    class Recorder:
        @hookimpl
        def archive_merged(self, archive: Path, sources: list[Path]) -> None:
            calls.append((archive, list(sources)))

    source = tmp_path / "a"
    (source / "warc").mkdir(parents=True)
    pm = make_plugin_manager(autoload=False, plugins=[Recorder()])
    merge_archives([source], tmp_path / "out", plugin_manager=pm)
    assert calls == [(tmp_path / "out", [source])]


def test_worker_needs_a_started_crawl(redis_server: RedisServer, tmp_path: Path) -> None:
    from archiver.cli import main

    args = ["worker", "--frontier", redis_server.url, "--crawl-id", "nope", "-o", str(tmp_path / "w")]
    code = main([*args, "--wait", "0"])
    assert code == 2


def test_merge_refuses_an_archive_being_written(tmp_path: Path) -> None:
    from archiver.cli import main
    from archiver.lock import ArchiveLock

    source = tmp_path / "a"
    (source / "warc").mkdir(parents=True)
    with ArchiveLock(source):
        code = main(["merge", str(source), "-o", str(tmp_path / "out")])
    assert code == 1


@pytest.mark.timeout(120)
async def test_redis_lost_mid_crawl_stops_cleanly_with_a_message(
    site: Site, redis_server: RedisServer, tmp_path: Path
) -> None:
    expected = build_site(site, 400, delay=0.05)
    archive = tmp_path / "w"
    config = write_config(tmp_path / "crawl.toml", lease_seconds=2, max_tasks=4)
    args = ["crawl", site.url("/"), "-o", str(archive), "-c", str(config), *CRAWLERS]
    args += ["--frontier", redis_server.url, "--crawl-id", "lost"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=crawler_env(),
    )
    deadline = time.monotonic() + 30
    while sum(site.hits.values()) < 30:
        assert time.monotonic() < deadline and process.returncode is None
        await asyncio.sleep(0.02)
    redis_server.stop()
    stopped = time.monotonic()
    _, err = await asyncio.wait_for(process.communicate(), 60)
    lines = err.decode().strip().splitlines()
    assert process.returncode == 1, lines
    assert lines[-1].startswith(f"archiver: error: lost the Redis frontier at {redis_server.url}"), lines
    # A loaded machine may first warn of a late lease renewal: the pause need not be line 1.
    assert any("pausing, retrying for up to 5 s" in line for line in lines), lines
    assert time.monotonic() - stopped >= 4
    assert not list((archive / "warc").glob("*.open"))
    fetched = {path for path, _ in captures(archive)}
    assert len(fetched) >= 30 and fetched <= expected


@pytest.mark.parametrize("layout", ["plugin table", "before the move"])
def test_status_of_a_worker_archive_whose_redis_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    from redis_support import free_port
    from test_config_moved import old_crawl_toml

    from archiver.archive import prepare_archive
    from archiver.cli import main
    from archiver.config import load_config

    url = f"redis://127.0.0.1:{free_port()}/0"
    archive = tmp_path / "w"
    redis = {"crawl_id": "gone"}
    prepare_archive(load_config(None, {"output": str(archive), "frontier": url, "plugins": {"redis": redis}}))
    if layout == "before the move":
        old = old_crawl_toml("http://h.test/", str(archive), frontier=url, crawl_id="gone")
        (archive / "crawl.toml").write_text(old, encoding="utf-8")
    assert main(["status", str(archive)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{archive}: worker of crawl 'gone' at {url}"), lines
    assert lines[1].startswith(f"  cannot reach the Redis frontier at {url}"), lines


def test_a_shared_crawl_saved_before_the_move(
    redis_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its configuration in Redis and its workers' crawl.toml hold `crawl_id` and `lease_seconds`
    under [crawl]: a worker, `status` and `merge` still find the crawl and its lease."""
    from archiver_plugins.redis.settings import RedisSettings
    from archiver_plugins.redis.shared import shared_config
    from test_config_moved import old_crawl_toml

    from archiver.cli import main
    from archiver.merge import merge_archives

    url = redis_server.url
    old = old_crawl_toml(
        "http://h.test/", str(tmp_path / "first"), frontier=url, crawl_id="old", lease_seconds=7.0
    )
    now = time.time()
    client = redis_server.client()
    try:
        client.set("archiver:{old}:config", old)
        client.hset("archiver:{old}:counts", mapping={"done": 5, "failed": 1, "queued": 0})
        client.sadd("archiver:{old}:seen", *(f"u{i}" for i in range(6)))
        for name, ago in (("fresh", 1), ("silent", 20)):  # 20 s: dead with a 7 s lease, alive with 30 s
            beat = {"host": name, "pid": 1, "seen_at": now - ago, "pages": 3}
            client.hset("archiver:{old}:workers", name, json.dumps(beat))
    finally:
        client.close()

    config = shared_config(url, "old", {"output": str(tmp_path / "w")})
    assert config.plugin_settings("redis", RedisSettings) == RedisSettings("old", 7.0)
    assert (config.frontier, config.output, config.robots) == (url, str(tmp_path / "w"), False)

    worker = tmp_path / "w"
    (worker / "warc").mkdir(parents=True)
    (worker / "crawl.toml").write_text(old.replace(str(tmp_path / "first"), str(worker)), encoding="utf-8")
    assert main(["status", str(worker), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["state"], status["frontier"], status["done"]) == ("complete", "redis", 5)
    assert status["shared"]["crawl_id"] == "old"
    assert status["shared"]["workers"] == ["fresh PID 1: 3 pages"]

    pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.warc", "archiver_plugins.redis"])
    merged = tmp_path / "merged"
    merge_archives([worker], merged, plugin_manager=pm)
    report = json.loads((merged / "report.json").read_text())
    assert report["shared"]["crawl_id"] == "old" and report["shared"]["complete"] is True
    assert (report["pages"], report["failed"]) == (5, 1)


@pytest.mark.parametrize(
    ("shared", "code", "said"),
    [
        ([], 2, "a Redis frontier needs --crawl-id NAME"),
        (["--crawl-id", "nowhere"], 1, "cannot reach the Redis frontier at redis://127.0.0.1:"),
    ],
    ids=["no-crawl-id", "unreachable"],
)
async def test_a_shared_crawl_that_never_began_leaves_no_folder(
    tmp_path: Path, shared: list[str], code: int, said: str
) -> None:
    """A folder left by a start that failed would be called a worker of crawl '' by `status`."""
    from tls_site import closed_port

    archive = tmp_path / "a"
    frontier = f"redis://127.0.0.1:{closed_port()}/0"
    args = ["crawl", "http://127.0.0.1:9/", "-o", archive, "--frontier", frontier, *shared, *CRAWLERS]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *map(str, args),
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == code, err
    assert said in err.decode() and err.decode().count("\n") == 1
    assert not archive.exists()
