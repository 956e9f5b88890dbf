"""`archiver changes`: what changed between the last two crawls of an archive, or since a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from archiver_plugins.archive_reader.changes import parse_since
from changing_site import FIRST, SECOND, add_not_modified_crawl, crawl, crawl_twice, next_second, serve
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main
from archiver.history import read_history
from archiver.layout import HISTORY_NAME
from archiver.testing import Site

KINDS = ("added", "changed", "unchanged", "removed", "unreached")


def run_changes(capsys: pytest.CaptureFixture[str], archive: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["changes", str(archive), *args])
    out, err = capsys.readouterr()
    return code, out, err


def changes_json(capsys: pytest.CaptureFixture[str], archive: Path, *args: str) -> dict[str, Any]:
    """The --json report, every kind listed (--unchanged)."""
    code, out, err = run_changes(capsys, archive, "--json", "--unchanged", *args)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def by_kind(report: dict[str, Any], base: str) -> dict[str, dict[str, str]]:
    """{kind: {path: how}} of a --json report."""
    return {
        kind: {item["url"].removeprefix(base): item["how"] for item in report["urls"][kind]} for kind in KINDS
    }


async def test_two_crawls_added_changed_unchanged_removed(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    base = site.url("")
    report = changes_json(capsys, archive)
    assert by_kind(report, base) == {
        "added": {"/fresh": "new"},
        "changed": {"/": "new payload", "/edited": "new payload"},
        "unchanged": {"/same": "identical-payload"},
        "removed": {"/gone": "404", "/dropped": "not reached"},
        "unreached": {},
    }
    assert report["counts"] == {"added": 1, "changed": 2, "unchanged": 1, "removed": 2, "unreached": 0}
    assert [run["crawl"] for run in report["older"]["crawls"]] == [1]
    assert [run["crawl"] for run in report["newer"]["crawls"]] == [2]
    assert report["newer"]["complete"] is True and report["compared"] and report["history"]

    code, out, _err = run_changes(capsys, archive)
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0].startswith(f"{archive}: crawl 2 (recrawl, started ") and "against crawl 1 (crawl" in lines[0]
    )
    assert "1 added, 2 changed, 1 unchanged, 2 removed" in lines[1]
    assert any(line.startswith("removed") and base + "/gone" in line and "(404" in line for line in lines)
    assert any(
        line.startswith("removed") and base + "/dropped" in line and "not reached" in line for line in lines
    )
    assert any(line.startswith("added") and base + "/fresh" in line for line in lines)


async def test_unchanged_urls_are_counted_and_listed_on_request(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After an update most URLs are unchanged: the report counts them and lists what changed."""
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    base = site.url("")
    code, out, _err = run_changes(capsys, archive)
    assert code == 0
    lines = out.splitlines()
    assert "1 added, 2 changed, 1 unchanged, 2 removed" in lines[1]
    assert lines[2] == "  (1 unchanged URL not listed: --unchanged lists them)"
    assert not any(line.startswith("unchanged") for line in lines)
    assert sum(line.startswith(("added", "changed", "removed")) for line in lines) == 5

    code, out, _err = run_changes(capsys, archive, "--unchanged")
    listed = [line for line in out.splitlines() if line.startswith("unchanged")]
    assert code == 0 and len(listed) == 1 and base + "/same" in listed[0]
    assert "not listed" not in out

    code, out, _err = run_changes(capsys, archive, "--json")
    report = json.loads(out)
    assert report["counts"]["unchanged"] == 1 and report["urls"]["unchanged"] == []
    assert len(report["urls"]["changed"]) == 2


async def test_server_not_modified_revisit_counts_as_unchanged(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The update crawl's record shape: warcio reads it, and the changes reader judges it."""
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    await next_second()
    base = site.url("")
    warc = add_not_modified_crawl(archive, base, "<p>The third draft.</p>", complete=False)
    with warc.open("rb") as handle:
        revisit = next(iter(ArchiveIterator(handle)))
        assert revisit.rec_type == "revisit"
        assert revisit.rec_headers.get_header("WARC-Profile").endswith("/revisit/server-not-modified")
        assert revisit.http_headers.get_statuscode() == "304"

    report = changes_json(capsys, archive)
    assert [run["crawl"] for run in report["newer"]["crawls"]] == [3]
    assert report["newer"]["complete"] is False
    found = by_kind(report, base)
    assert found["unchanged"] == {"/same": "server-not-modified"}
    assert found["changed"] == {"/edited": "new payload"}
    # crawl 3 did not finish: what it did not reach is not claimed removed
    assert found["removed"] == {} and found["unreached"] == {
        "/": "not reached (crawl unfinished)",
        "/fresh": "not reached (crawl unfinished)",
    }
    same = next(item for item in report["urls"]["unchanged"])
    assert same["newer"]["kind"] == "server-not-modified" and same["newer"]["status"] == 304
    assert same["newer"]["digest"] == same["older"]["digest"] is not None
    assert same["older"]["kind"] == "identical-payload"

    code, out, _err = run_changes(capsys, archive)
    assert code == 0 and "2 not reached yet (the newer crawl is unfinished)" in out

    # an earlier pair of crawls, chosen by number: crawl 3's captures stay out of crawl 2's side
    second = changes_json(capsys, archive, "--crawl", "2")
    assert by_kind(second, base)["changed"] == {"/": "new payload", "/edited": "new payload"}
    assert by_kind(second, base)["unchanged"] == {"/same": "identical-payload"}
    code, out, _err = run_changes(capsys, archive, "--crawl", "1")
    assert code == 0 and "is the first crawl" in out
    code, out, err = run_changes(capsys, archive, "--crawl", "9")
    assert code == 2 and err.count("\n") == 1 and "has no crawl 9 (crawls 1 to 3)" in err


async def test_since_a_time_or_a_duration(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    base = site.url("")
    second = read_history(archive)[1].started
    between = changes_json(capsys, archive, "--since", second.isoformat())
    assert by_kind(between, base) == by_kind(changes_json(capsys, archive), base)
    assert between["since"] == second.isoformat()
    assert [run["crawl"] for run in between["newer"]["crawls"]] == [2]

    # a week back: nothing came before, every page captured in either crawl is new
    week = changes_json(capsys, archive, "--since", "7d")
    assert set(by_kind(week, base)["added"]) == {*SECOND}
    assert week["counts"]["changed"] == week["counts"]["removed"] == 0

    # a date in the future: nothing since then, and crawl 2 is not "since"
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    later = changes_json(capsys, archive, "--since", tomorrow)
    assert later["newer"]["crawls"] == [] and later["newer"]["complete"] is False
    assert later["counts"]["removed"] == 0 and later["counts"]["unreached"] == 5


@pytest.mark.parametrize("text", ["yesterday", "7x", "2026-13-01", "", "-3d", "1" * 20 + "d"])
def test_a_bad_since_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, out, err = run_changes(capsys, tmp_path, "--since", text)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--since" in err and "expected a date" in err


def test_since_forms() -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert parse_since("12h", now) == datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    assert parse_since("2w", now) == now - timedelta(weeks=2)
    assert parse_since("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_since("2026-11-01T08:30", now) == datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
    assert parse_since("2026-11-01T08:30+01:00", now) == datetime(2026, 11, 1, 7, 30, tzinfo=UTC)


async def test_one_crawl_and_no_history(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    serve(site, SECOND)
    await crawl(site, archive)
    code, out, _err = run_changes(capsys, archive)
    assert code == 0 and "holds one crawl (crawl 1 (crawl, started" in out and "nothing to compare" in out
    report = changes_json(capsys, archive)
    assert not report["compared"] and report["older"] is None and sum(report["counts"].values()) == 0
    assert all(report["urls"][kind] == [] for kind in KINDS)

    (archive / HISTORY_NAME).unlink()  # as an archive made before crawls were numbered
    code, out, _err = run_changes(capsys, archive)
    assert code == 0
    assert (
        "has no crawl history" in out
        and "all its captures count as crawl 1" in out
        and "holds one crawl" in out
    )
    report = changes_json(capsys, archive, "--since", "1d")
    assert not report["history"] and report["newer"]["crawls"] == []
    assert set(by_kind(report, site.url(""))["added"]) == {"/", "/same", "/edited", "/fresh"}


def test_missing_or_foreign_archive_is_the_usual_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run_changes(capsys, tmp_path / "nowhere")
    assert (
        code == 2 and err.strip().endswith(f"no archive at {tmp_path / 'nowhere'}") and err.count("\n") == 1
    )
    (tmp_path / "plain").mkdir()
    code, _out, err = run_changes(capsys, tmp_path / "plain")
    assert code == 2 and "is not an archive" in err and err.count("\n") == 1
    unreadable = tmp_path / "unreadable"
    (unreadable / "warc").mkdir(parents=True)
    (unreadable / HISTORY_NAME).mkdir()  # a history that cannot be read as a file
    code, _out, err = run_changes(capsys, unreadable)
    assert code == 1 and f"cannot read {unreadable}" in err and err.count("\n") == 1


async def test_hostile_urls_are_escaped_in_text_and_exact_in_json(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    await next_second()
    base = site.url("")
    hostile = base + "/\u202etxt.exe\u001b[2J"
    add_not_modified_crawl(archive, base, "<p>x</p>", (hostile,), complete=True)
    code, out, _err = run_changes(capsys, archive)
    assert code == 0 and "\u202e" not in out and "\x1b" not in out
    assert "/\\u202etxt.exe\\x1b[2J" in out
    report = changes_json(capsys, archive)
    assert hostile in {item["url"] for item in report["urls"]["added"]}


async def test_a_url_whose_fetch_failed_is_unreached_not_removed(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiohttp import web

    archive = tmp_path / "a"
    serve(site, FIRST)
    await crawl(site, archive)
    await next_second()

    async def reset(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # no answer at all: the fetch fails after its tries
        raise web.HTTPInternalServerError

    serve(site, FIRST)
    site.handler("/edited", reset)
    await crawl(site, archive, "--update", "--max-tries", "1")
    report = by_kind(changes_json(capsys, archive), site.url(""))
    assert "/edited" not in report["removed"], report
    assert report["unreached"] == {"/edited": "the fetch failed in this crawl"}


async def test_quiet_prints_the_crawls_compared_and_the_counts_only(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)
    code, full, _ = run_changes(capsys, archive)
    assert code == 0
    code, quiet, err = run_changes(capsys, archive, "-q")
    assert (code, err) == (0, "")
    assert quiet.splitlines() == full.splitlines()[:2]
    assert "1 added, 2 changed, 1 unchanged, 2 removed" in quiet
