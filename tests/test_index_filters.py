"""`search` filters (site, content type, capture time) and the searcher shared between calls."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from archiver_plugins.index import search as search_module
from archiver_plugins.index.search import QueryError, search
from archiver_plugins.index.store import Capture, engine_dir, open_or_create
from archiver_plugins.index.writer import Batcher

from archiver.cli import main


def page(url: str, time: str, kind: str = "text/html", words: str = "") -> Capture:
    if kind == "text/plain":
        body = f"widget notes {words}"
    else:
        body = f"<html><head><title>Widget {url}</title></head><body><p>widget {words}</p></body></html>"
    return Capture(url, time, 200, kind, "utf-8", body.encode())


def add(archive: Path, captures: list[Capture]) -> None:
    ix, _ = open_or_create(engine_dir(archive))
    batcher = Batcher(ix, batch_size=1000, batch_seconds=60, max_chars=100_000)
    for capture in captures:
        batcher.add(capture)
    batcher.commit()
    ix.close()


PAGES = [
    *(page(f"http://a.test/{n}", f"2023{n % 12 + 1:02d}15120000") for n in range(30)),
    *(page(f"http://docs.a.test/{n}", f"202401{n + 1:02d}000000") for n in range(12)),
    *(page(f"http://b.test/{n}.txt", f"2024060{n + 1}083000", "text/plain") for n in range(5)),
    page("http://b.test/x.xhtml", "20240701000000", "application/xhtml+xml"),
]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("filters") / "archive"
    add(path, PAGES)
    return path


def urls(archive: Path, text: str = "widget", **filters: str) -> set[str]:
    results = search(archive, text, limit=1000, with_snippets=False, **filters)
    assert results.total == len(results.hits)
    return {hit.url for hit in results.hits}


def test_site_filter_takes_subdomains_and_ignores_port_scheme_and_path(archive: Path) -> None:
    assert len(urls(archive, site="a.test")) == 42
    assert len(urls(archive, site="docs.a.test")) == 12
    assert urls(archive, site="http://b.test:8080/some/path") == urls(archive, site="B.TEST")
    assert len(urls(archive, site="b.test")) == 6
    assert urls(archive, site="nowhere.test") == set()


def test_content_type_filter_exact_or_family(archive: Path) -> None:
    assert len(urls(archive, content_type="text/plain")) == 5
    assert len(urls(archive, content_type="TEXT/")) == 47
    assert urls(archive, content_type="application/xhtml+xml") == {"http://b.test/x.xhtml"}
    assert urls(archive, content_type="image/png") == set()


def test_time_range_at_any_precision_inclusive(archive: Path) -> None:
    assert len(urls(archive, time_from="2024")) == 18
    assert len(urls(archive, time_to="2023")) == 30
    assert len(urls(archive, time_from="20230315", time_to="20230415")) == 6  # March and April 15th
    assert len(urls(archive, time_from="20240101000000", time_to="20240101000000")) == 1
    assert urls(archive, time_from="2030") == set()


def test_filters_combine_and_count_and_page_exactly(archive: Path) -> None:
    expected = {
        c.url
        for c in PAGES
        if (urlsplit(c.url).hostname or "").endswith("a.test")
        and "20230600000000" <= c.time <= "20240105999999"
    }
    assert len(expected) == 20
    assert urls(archive, site="a.test", time_from="202306", time_to="20240105") == expected
    seen: list[str] = []
    for number in (1, 2, 3, 4):
        results = search(
            archive, "widget", limit=6, page=number, site="a.test", time_from="202306", time_to="20240105"
        )
        assert results.total == 20 and results.pages == 4
        seen += [hit.url for hit in results.hits]
    assert len(seen) == 20 and set(seen) == expected


def test_filters_alone_list_every_page_they_let_through(archive: Path) -> None:
    results = search(archive, "", limit=100, content_type="text/plain")
    assert results.total == 5 and all(h.url.endswith(".txt") for h in results.hits)
    with pytest.raises(QueryError, match="empty"):
        search(archive, "  ")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("time_from", "2024-01-01", "capture time"),
        ("time_to", "123456789012345", "capture time"),
        ("content_type", "html", "content type"),
        ("content_type", "text/html; charset=x", "content type"),
        ("site", "a b", "host"),
        ("site", "http://", "host"),
    ],
)
def test_bad_filters_are_query_errors(archive: Path, option: str, value: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        search(archive, "widget", **{option: value})  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="empty"):
        search(archive, "widget", time_from="2024", time_to="2023")


def test_cli_filters(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(archive), "widget", "--type", "text/plain", "--from", "2024", "-n", "50"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("5 pages match")
    assert main(["search", str(archive), "widget", "--from", "tomorrow"]) == 2
    assert "capture time" in capsys.readouterr().err


def shared_index(archive: Path) -> object:
    return search_module._shared[str(archive.resolve())]._index


def test_the_index_is_opened_once_and_sees_every_commit(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    add(archive, [page("http://c.test/1", "20240101000000", words="alpha")])
    assert search(archive, "alpha").total == 1
    first = shared_index(archive)
    assert search(archive, "widget", site="c.test").total == 1
    assert shared_index(archive) is first
    add(archive, [page("http://c.test/2", "20240101000000", words="alpha")])
    assert search(archive, "alpha", site="c.test").total == 2
    assert shared_index(archive) is first
    # a rebuilt index is a new folder, maybe at the same generation: opened afresh
    warc_less = tmp_path / "other"
    add(warc_less, [page("http://c.test/3", "20240101000000", words="beta")])
    engine_dir(archive).rename(tmp_path / "old-index")
    engine_dir(warc_less).rename(engine_dir(archive))
    assert {h.url for h in search(archive, "widget").hits} == {"http://c.test/3"}


def test_concurrent_searches_while_the_index_grows(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    add(archive, [page(f"http://d.test/{n}", "20240101000000", words="gamma") for n in range(20)])
    errors: list[BaseException] = []
    totals: list[int] = []
    stop = threading.Event()

    def searching() -> None:
        try:
            while not stop.is_set():
                results = search(archive, "gamma", limit=5, site="d.test")
                assert len(results.hits) == 5 and results.total >= 20
                totals.append(results.total)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searching) for _ in range(6)]
    for thread in threads:
        thread.start()
    try:
        for batch in range(1, 6):
            add(
                archive,
                [page(f"http://d.test/{batch}-{n}", "20240101000000", words="gamma") for n in range(10)],
            )
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert not errors, errors[0]
    assert search(archive, "gamma", site="d.test").total == 70
    assert set(totals) <= {20, 30, 40, 50, 60, 70} and totals  # each search saw one whole commit
