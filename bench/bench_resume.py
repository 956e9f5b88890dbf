"""Kill a real crawl with SIGKILL at random moments, resume it each time, and check the archive.

A site of PAGES generated pages (links between them, redirects, missing pages) is served
by aiohttp on 127.0.0.1.  One `archiver crawl` runs it uninterrupted for reference; then
the same command is started again and again into a second archive, killed with SIGKILL
after a random number of requests, and finally run to the end.  Checked at the end:

* the set of URLs with a response (or revisit) record equals the reference crawl's;
* no URL has two response records;
* the strict verifier (`archiver_plugins.warc.verify`) passes on every WARC file;
* no `.open` file is left and the state says complete;
* with --index, the search index holds exactly the indexable (2xx HTML) pages.

    python -m bench.bench_resume --pages 2000 --kills 6 [--seed 1] [--index]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
FAST = ["--delay", "0", "--ignore-robots", "--max-tries", "1", "--frontier", "sqlite", "-q"]


def make_app(pages: int, delay: float, hits: collections.Counter[str]) -> web.Application:
    async def serve(request: web.Request) -> web.StreamResponse:
        path = request.path
        hits[path] += 1
        if delay:
            await asyncio.sleep(delay)
        if path.startswith("/r") and path[2:].isdigit():
            i = int(path[2:])
            return web.Response(status=301, headers={"Location": f"/p{(i * 3 + 1) % pages}"})
        if not (path.startswith("/p") and path[2:].isdigit()) or int(path[2:]) >= pages:
            return web.Response(status=404, text="not found")
        i = int(path[2:])
        links = {f"/p{(i * 7 + 3) % pages}", f"/p{(i + 1) % pages}", f"/p{(2 * i) % pages}"}
        if i % 10 == 0:
            links.add(f"/r{i}")
        if i % 25 == 0:
            links.add(f"/missing{i % 3}")
        anchors = " ".join(f'<a href="{link}">{link}</a>' for link in sorted(links))
        words = " ".join(f"word{(i * k) % 5000}" for k in range(1, 80))
        body = (
            f"<html><head><title>Page {i}</title></head><body><p>Page {i}: {words}</p>{anchors}</body></html>"
        )
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", serve)
    return app


def captures(archive: Path) -> collections.Counter[str]:
    found: collections.Counter[str] = collections.Counter()
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


def indexable(archive: Path) -> set[str]:
    urls = set()
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "response" and record.http_headers is not None:
                    status = int(record.http_headers.get_statuscode())
                    kind = record.http_headers.get_header("Content-Type") or ""
                    if 200 <= status < 300 and kind.startswith("text/html"):
                        urls.add(record.rec_headers.get_header("WARC-Target-URI"))
    return urls


def indexed_urls(archive: Path) -> collections.Counter[str]:
    from whoosh import index as whoosh_index

    found: collections.Counter[str] = collections.Counter()
    ix = whoosh_index.open_dir(str(archive / "index" / "whoosh"), indexname="MAIN")
    with ix.searcher() as searcher:
        for fields in searcher.all_stored_fields():
            found[str(fields.get("url"))] += 1
    ix.close()
    return found


async def run(args: argparse.Namespace) -> int:
    hits: collections.Counter[str] = collections.Counter()
    runner = web.AppRunner(make_app(args.pages, args.delay, hits), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    root = f"http://127.0.0.1:{port}/p0"
    plugins = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]
    if args.index:
        plugins += ["--plugin", "archiver_plugins.index"]
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    rng = random.Random(seed)
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        reference, killed = Path(folder) / "reference", Path(folder) / "killed"
        common = [*FAST, *plugins, "--max-tasks", str(args.tasks)]

        async def start(archive: Path) -> asyncio.subprocess.Process:
            return await asyncio.create_subprocess_exec(
                sys.executable, "-m", "archiver", "crawl", root, "-o", str(archive), *common,
                env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip

        started = time.monotonic()
        proc = await start(reference)
        _, err = await proc.communicate()
        if proc.returncode != 0:
            print(err.decode(), file=sys.stderr)
            return 1
        expected = set(captures(reference))
        print(f"reference crawl: {len(expected)} URLs in {time.monotonic() - started:.1f} s (seed {seed})")
        hits.clear()

        kills = runs = 0
        while kills < args.kills:
            runs += 1
            budget = rng.randint(args.pages // (args.kills * 4), args.pages // args.kills)
            wanted = hits.total() + budget
            proc = await start(killed)
            while proc.returncode is None and hits.total() < wanted:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 0.002)
            await asyncio.sleep(rng.uniform(0, 0.02))
            if proc.returncode is None:
                proc.kill()
                kills += 1
            await proc.communicate()
            print(f"  run {runs}: {'killed' if proc.returncode == -9 else f'exit {proc.returncode}'}"
                  f" after {hits.total()} requests so far")  # fmt: skip
            if proc.returncode == 0:
                break
        started = time.monotonic()
        proc = await start(killed)
        _, err = await proc.communicate()
        print(f"final run: exit {proc.returncode} in {time.monotonic() - started:.1f} s")
        if proc.returncode != 0:
            failures.append(f"final run failed: {err.decode()[-500:]}")

        got = captures(killed)
        twice = sorted(url for url, n in got.items() if n > 1)
        missing, extra = expected - set(got), set(got) - expected
        refetched = sum(n - 1 for n in hits.values() if n > 1)
        print(f"kills: {kills}; requests after the reference: {hits.total()} for {len(expected)} URLs"
              f" ({refetched} fetched again: in flight at a kill)")  # fmt: skip
        print(f"URLs with a response record: {len(got)} (reference {len(expected)})")
        if missing or extra:
            failures.append(f"URL sets differ: {len(missing)} missing, {len(extra)} extra")
        if twice:
            failures.append(f"{len(twice)} URLs with two response records, e.g. {twice[:3]}")
        from archiver_plugins.warc.verify import verify_file

        files = sorted((killed / "warc").glob("*.warc.gz"))
        bad = [str(f) for path in files for f in verify_file(path).faults]
        print(f"strict verifier: {len(files)} files, {len(bad)} faults")
        failures.extend(bad[:5])
        if list((killed / "warc").glob("*.open")):
            failures.append(".open files left")
        from archiver.status import archive_status

        state = archive_status(killed).state
        print(f"status: {state}")
        if state != "complete":
            failures.append(f"state is {state}")
        if args.index:
            pages = indexable(killed)
            indexed = indexed_urls(killed)
            dup = [u for u, n in indexed.items() if n > 1]
            print(f"index: {sum(indexed.values())} documents, {len(pages)} indexable pages, {len(dup)} twice")
            from archiver.manager import Hooks, make_plugin_manager

            pm = make_plugin_manager(autoload=False, modules=["archiver_plugins.index"])
            for label, value in Hooks(pm).archive_status(killed):
                print(f"  {label}: {value}")
            if set(indexed) != pages or dup:
                failures.append(
                    f"index differs: {len(pages - set(indexed))} missing, {len(set(indexed) - pages)} extra,"
                    f" {len(dup)} twice"
                )
    await runner.cleanup()
    for failure in failures:
        print("FAIL:", failure)
    print("OK" if not failures else f"{len(failures)} problems (seed {seed})")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.005, help="seconds per response")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--index", action="store_true", help="also run the index plugin and check it")
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
