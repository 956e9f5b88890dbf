"""Index plugin: the query language, ranking, snippets and errors of `search`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from archiver_plugins.index.search import MAX_EXPANSION, QueryError, search
from archiver_plugins.index.store import (
    Capture,
    DamagedIndexError,
    MissingIndexError,
    engine_dir,
    open_or_create,
)
from archiver_plugins.index.writer import Batcher
from warc_pages import write_warc

from archiver.cli import main
from archiver.errors import ArchiveError

PAGES = {
    "http://docs.example.test/asyncio-queue.html": (
        "Asyncio Queue",
        "<h1>Asyncio queue</h1><p>A queue distributes work between coroutines. "
        "Put items in the queue and get them out in order.</p>",
    ),
    "http://docs.example.test/tutorial.html": (
        "Tutorial",
        "<p>This long tutorial covers many topics: files, sockets, threads, processes, "
        "and in one paragraph it mentions an asyncio queue in passing. "
        + "Unrelated filler text about gardening and cooking. " * 40
        + "</p>",
    ),
    "http://docs.example.test/event-loop.html": (
        "Event loop",
        "<p>The event loop runs tasks. Each loop iteration polls for events.</p>",
    ),
    "http://docs.example.test/loops.html": (
        "Loops",
        "<p>An event is not a loop. A loop over events is not an event loop either.</p>",
    ),
    "http://blog.other.test/post.html": (
        "Blog post about queues",
        "<p>My queue of books to read is long. Coroutines are fun.</p>",
    ),
    "http://blog.other.test/escape.html": (
        "Markup <b> test",
        "<p>Search for widgets &lt;img src=x onerror=alert(1)&gt; here.</p>",
    ),
    "http://cn.example.test/zh.html": (
        "中文页面",
        "<p>这是一个关于全文搜索的页面。我们测试中文分词。</p>",
    ),
}


def build(archive: Path, pages: dict[str, tuple[str, str]], engine: str | None = None) -> None:
    """Index `pages` and write them as WARC records (the snippets' text is read from them)."""
    ix, _ = open_or_create(engine_dir(archive, engine))
    batcher = Batcher(ix, batch_size=100, batch_seconds=60, max_chars=100_000)
    captures = []
    for url, (title, body) in pages.items():
        html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
        captures.append(Capture(url, "20240501120003", 200, "text/html", "utf-8", html.encode()))
        batcher.add(captures[-1])
    batcher.commit()
    ix.close()
    write_warc(archive, captures)


@pytest.fixture(scope="module", params=["tantivy", "whoosh"])
def archive(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """PAGES indexed by each engine: the query language means the same in both."""
    path = tmp_path_factory.mktemp("search") / "archive"
    build(path, PAGES, request.param)
    return path


def urls(archive: Path, query: str, **options: object) -> list[str]:
    return [hit.url for hit in search(archive, query, limit=20, **options).hits]  # type: ignore[arg-type]


def test_title_match_beats_a_passing_mention(archive: Path) -> None:
    found = urls(archive, "asyncio queue")
    assert found[0] == "http://docs.example.test/asyncio-queue.html"
    assert "http://docs.example.test/tutorial.html" in found


def test_phrase_needs_the_words_together(archive: Path) -> None:
    assert set(urls(archive, '"event loop"')) == {
        "http://docs.example.test/event-loop.html",
        "http://docs.example.test/loops.html",
    }
    assert urls(archive, '"loop event"') == []
    assert urls(archive, "event loop")[0] == "http://docs.example.test/event-loop.html"


def test_boolean_operators(archive: Path) -> None:
    assert "http://blog.other.test/post.html" not in urls(archive, "queue NOT books")
    assert "http://blog.other.test/post.html" not in urls(archive, "queue -books")
    either = set(urls(archive, "gardening OR books"))
    assert either == {"http://docs.example.test/tutorial.html", "http://blog.other.test/post.html"}
    assert urls(archive, "gardening AND books") == []


def test_field_queries(archive: Path) -> None:
    assert urls(archive, "title:tutorial") == ["http://docs.example.test/tutorial.html"]
    assert urls(archive, "title:gardening") == []
    assert urls(archive, "url:loops") == ["http://docs.example.test/loops.html"]


def test_site_filter_matches_host_and_its_subdomains(archive: Path) -> None:
    assert set(urls(archive, "queue site:blog.other.test")) == {"http://blog.other.test/post.html"}
    assert set(urls(archive, "queue site:other.test")) == {"http://blog.other.test/post.html"}
    assert "http://blog.other.test/post.html" not in urls(archive, "queue site:example.test")


def test_a_pasted_url_finds_its_page_and_dangling_operators_are_ignored(archive: Path) -> None:
    assert urls(archive, " http://docs.example.test/loops.html ") == ["http://docs.example.test/loops.html"]
    assert urls(archive, "tutorial AND") == urls(archive, "OR tutorial") == urls(archive, "tutorial")


def test_empty_index_says_so(tmp_path: Path) -> None:
    ix, _ = open_or_create(engine_dir(tmp_path))
    ix.close()
    with pytest.raises(ArchiveError, match="holds no pages yet"):
        search(tmp_path, "anything")


def test_prefix_query(archive: Path) -> None:
    assert "http://docs.example.test/asyncio-queue.html" in urls(archive, "asyn*")
    assert "http://docs.example.test/asyncio-queue.html" in urls(archive, "corout*")


def test_hits_carry_capture_time_and_escaped_highlights(archive: Path) -> None:
    results = search(archive, "widgets")
    (hit,) = results.hits
    assert hit.time == "20240501120003"
    assert hit.host == "blog.other.test"
    assert hit.content_type == "text/html"
    assert hit.title == "Markup <b> test"  # stored raw: escape when rendering
    assert '<b class="match term0">widgets</b>' in hit.snippet
    assert "<img" not in hit.snippet and "&lt;img" in hit.snippet
    assert search(archive, "widgets", with_snippets=False).hits[0].snippet == ""


def test_phrase_snippet_shows_the_phrase(archive: Path) -> None:
    hit = search(archive, '"event loop"').hits[0]
    assert 'event</b> <b class="match' in hit.snippet.lower()


PHRASE_PAGES = {
    "http://docs.example.test/asyncio-eventloop.html": (
        "Event Loop",
        "<p>Source code: Lib/asyncio/events.py. The event loop is the core of every asyncio "
        "application. If there is no running event loop set, the function returns the "
        "result of the policy's call. Python's Runner runs until the future is done.</p>",
    ),
    "http://docs.example.test/runner.html": (
        "Runners",
        "<p>Debug mode settings: the Runner uses a context manager. A context manager "
        "is an object that defines the runtime context.</p>",
    ),
}


@pytest.fixture(scope="module")
def phrase_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("phrases") / "archive"
    build(path, PHRASE_PAGES)
    return path


def marked(snippet: str) -> list[str]:
    return re.findall(r'<b class="match term\d+">(.*?)</b>', snippet)


def test_a_phrase_marks_its_own_words_not_those_at_its_positions(phrase_archive: Path) -> None:
    (hit,) = search(phrase_archive, '"event loop"').hits
    assert marked(hit.snippet) == ["event", "loop", "event", "loop"]
    assert "The <b" in hit.snippet and "running <b" in hit.snippet
    (hit,) = search(phrase_archive, '"context manager"').hits
    assert marked(hit.snippet) == ["context", "manager", "context", "manager"]
    assert "runtime context." in hit.snippet  # a phrase word alone is not the phrase


def test_a_phrase_and_a_word_mark_both(phrase_archive: Path) -> None:
    (hit,) = search(phrase_archive, '"context manager" debug').hits
    assert marked(hit.snippet) == ["Debug", "context", "manager", "context", "manager"]


def test_a_chinese_phrase_is_marked_as_one_run(archive: Path) -> None:
    (hit,) = search(archive, "全文搜索").hits
    assert marked(hit.snippet) == ["全文搜索"]


def test_did_you_mean(archive: Path) -> None:
    results = search(archive, "asyncoi queue")
    assert results.total == 0
    assert results.suggestion == "asyncio queue"
    assert search(archive, "queue").suggestion is None


def test_chinese_two_character_word(archive: Path) -> None:
    assert urls(archive, "搜索") == ["http://cn.example.test/zh.html"]
    assert urls(archive, "全文搜索") == ["http://cn.example.test/zh.html"]
    assert urls(archive, "分词") == ["http://cn.example.test/zh.html"]
    assert urls(archive, "搜全") == []
    assert "<b" in search(archive, "中文").hits[0].snippet


def test_paging(archive: Path) -> None:
    first = search(archive, "queue", limit=1, page=1)
    second = search(archive, "queue", limit=1, page=2)
    assert first.total == second.total >= 2
    assert first.pages == first.total
    assert first.hits[0].url != second.hits[0].url
    assert second.hits[0].rank == 2


def test_wildcard_expansion_is_bounded(tmp_path: Path) -> None:
    words = " ".join(f"wa{i:05d}" for i in range(MAX_EXPANSION + 50))
    build(tmp_path, {"http://x.test/": ("Many words", f"<p>{words}</p>")})
    with pytest.raises(QueryError, match="more specific"):
        search(tmp_path, "*a*")
    assert search(tmp_path, "wa0001*").total == 1


def test_bad_queries_give_clear_errors(archive: Path) -> None:
    with pytest.raises(QueryError, match="common words"):
        search(archive, "the of and")
    with pytest.raises(QueryError, match="unknown field"):
        search(archive, "colour:red")
    with pytest.raises(QueryError, match="empty"):
        search(archive, "   ")


@pytest.mark.parametrize("torn", ["meta.json", ".term", ".idx", ".store", ".pos"])
def test_missing_and_damaged_index(tmp_path: Path, torn: str) -> None:
    with pytest.raises(MissingIndexError, match="archiver reindex"):
        search(tmp_path, "anything")
    build(tmp_path, {"http://x.test/": ("Page", "<p>text</p>")})
    for path in engine_dir(tmp_path).glob(f"*{torn}"):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])  # what a power loss or a full disk can leave
    with pytest.raises(DamagedIndexError, match="archiver reindex"):
        search(tmp_path, "text")


def test_cli_prints_rank_title_url_time_and_snippet(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(archive), "asyncio", "queue"]) == 0
    out = capsys.readouterr().out
    assert "1. Asyncio Queue" in out
    assert "http://docs.example.test/asyncio-queue.html  2024-05-01 12:00:03 UTC" in out
    assert "\x1b[" not in out and "<b" not in out  # not a terminal: plain text


def test_cli_json_and_limits(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(archive), "queue", "--json", "--limit", "1", "--page", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["page"] == 2 and data["limit"] == 1 and len(data["hits"]) == 1
    assert set(data["hits"][0]) >= {"url", "title", "time", "snippet", "score", "rank"}


def test_cli_errors_are_one_line(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(tmp_path / "nope"), "x"]) == 2
    assert main(["search", str(tmp_path), "x"]) == 2  # not an archive
    assert main(["search", str(archive), "the"]) == 2
    assert main(["search", str(archive), os.fsdecode(b"caf\xe9")]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line]
    assert all(line.startswith("archiver: error: ") for line in lines), lines
    assert "Traceback" not in err
    assert "UTF-8" in err


def test_cli_did_you_mean(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(archive), "asyncoi"]) == 0
    out = capsys.readouterr().out
    assert "no pages match 'asyncoi'" in out
    assert "did you mean: asyncio" in out
