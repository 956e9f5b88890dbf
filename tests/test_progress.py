"""The progress display on a real terminal of 80 columns: what bounds the pace, time left, stages."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from terminal import WIDTH, run_on_terminal, screen_lines

from archiver.model import Counts
from archiver.progress import crawling_details, pace_note
from archiver.runner import human_summary
from archiver.testing import Site
from archiver.units import size

PAGES = 30


async def test_progress_names_the_pace_and_the_catch_up_in_80_columns(site: Site, tmp_path: Path) -> None:
    # pages heavy enough to index that the catch-up lasts beyond a refresh of the display
    words = " ".join(f"word{n}" for n in range(15_000))

    site.fan(PAGES, body=f"<html><body><p>{words}</p></body></html>")
    config = tmp_path / "c.toml"
    config.write_text("[plugins.index]\ncrawl_share = 0.01\nbatch_size = 5\n")
    args = ["crawl", site.url("/"), "-o", "a", "-c", str(config), "--delay", "0.1", "--ignore-robots"]
    code, output = await asyncio.to_thread(run_on_terminal, args, tmp_path, 120)
    assert code == 0, output[-2000:]
    lines = screen_lines(output)
    assert lines and max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert not [line for line in lines if line.endswith("…")], "a line was cut"
    polite = f"polite: 0.1 s between requests to {site.host} (set by --delay or the config)"
    assert polite in lines
    assert any("--delay SECONDS" in line for line in lines)
    assert any(re.search(r"about \d+:\d\d:\d\d left", line) for line in lines)
    assert any(line.startswith("index catch-up") for line in lines)
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    caught_up = report["after_crawl"]["caught_up"]["index"]
    assert 0 < caught_up <= PAGES + 1 and report["after_crawl"]["seconds"] > 0
    assert f"Then index caught up {caught_up:,} pages in" in output
    # the display's last count of the catch-up is the summary's: "N of N pages", N caught up
    counted = [re.match(r"(\d+) of (\d+) pages", line) for line in lines]
    done, total = (int(n) for n in [m for m in counted if m][-1].groups())
    assert done == total == caught_up, (done, total, caught_up)


async def test_ctrl_c_during_the_catch_up_says_what_waits_and_how_to_index_it(
    site: Site, tmp_path: Path
) -> None:
    words = " ".join(f"word{n}" for n in range(60_000))
    site.fan(2 * PAGES, body=f"<html><body><p>{words}</p></body></html>")
    config = tmp_path / "c.toml"
    config.write_text("[plugins.index]\ncrawl_share = 0.01\nbatch_size = 5\nprocesses = 1\n")
    args = ["crawl", site.url("/"), "-o", "a", "-c", str(config), "--delay", "0", "--ignore-robots"]
    code, output = await asyncio.to_thread(
        run_on_terminal, args, tmp_path, 120, interrupt_when="index catch-up"
    )
    assert code == 130, output[-2000:]
    lines = screen_lines(output)
    last = [line for line in lines if " of " in line and " pages | " in line][-1]
    assert last.endswith("| interrupted"), last
    told = [line for line in lines if line.startswith("Interrupted")]
    assert len(told) == 1 and "run the same command again" not in told[0], told
    told_right = r"Interrupted after the last page: [\d,]+ pages? waits? for the search index;"
    assert re.fullmatch(told_right + r" `archiver reindex --pending a` indexes them\.", told[0]), told
    status = await asyncio.to_thread(run_on_terminal, ["status", "a"], tmp_path, 60)
    assert "run `archiver reindex --pending a`" in status[1]


def test_the_progress_line_and_the_summary_give_bytes_in_one_unit() -> None:
    """34,900,000 bytes are 34.9 MB (decimal, 1 MB = 1,000,000 bytes) in both places."""
    received = 34_900_000
    line = crawling_details(Counts(done=7, queued=3), 2.0, received)
    report = {
        "pages": 7, "bytes": received, "wall_seconds": 1.0, "pages_per_second": 7.0, "failed": 0,
        "redirects": 0, "by_status_class": {"2xx": 7}, "errors_by_kind": {}, "skipped_by_reason": {},
        "archive": "a",
    }  # fmt: skip
    assert line.endswith("| 34.9 MB")
    assert "Crawled 7 pages (34.9 MB)" in human_summary(report)
    assert [size(n) for n in (0, 999, 1000, 1_234_567, 999_960_000, 2 * 10**12)] == [
        "0 B", "999 B", "1.0 kB", "1.2 MB", "1.0 GB", "2.0 TB",
    ]  # fmt: skip


async def test_the_catch_up_counts_the_pages_left_when_a_crawl_ends_fast(site: Site, tmp_path: Path) -> None:
    """A crawl shorter than the spool's half-second check: the count the catch-up starts
    from is the spool's as the last page left it, never one taken earlier."""
    site.fan(60, body="<html><body><p>" + " ".join(f"w{n}" for n in range(30_000)) + "</p></body></html>")
    config = tmp_path / "c.toml"
    config.write_text("[plugins.index]\ncrawl_share = 0.01\n")
    args = ["crawl", site.url("/"), "-o", "a", "-c", str(config), "--delay", "0", "--ignore-robots"]
    code, output = await asyncio.to_thread(run_on_terminal, args, tmp_path, 120)
    assert code == 0, output[-2000:]
    caught_up = json.loads((tmp_path / "a" / "report.json").read_text())["after_crawl"]["caught_up"]["index"]
    shown = [int(n.replace(",", "")) for n in re.findall(r"indexing ([\d,]+) pages", output)]
    assert shown and max(shown) <= caught_up, (shown, caught_up)


def test_a_patch_names_the_settings_of_crawl_toml_not_options_it_does_not_take() -> None:
    busy = Counts(done=3, in_flight=2, fetching=2)
    assert pace_note(None, busy, 2) == "all 2 workers busy: --max-tasks raises their number"
    patch = pace_note(None, busy, 2, options=False)
    assert patch == "all 2 workers busy: max_tasks in the archive's crawl.toml raises their number"
