"""A search's first page holds the best-scored pages of the whole result set.

An engine that prunes by estimated scores must not drop real hits (whoosh's top-N collector
once lost a page of `site:HOST word`'s top 10 on bench pages): the first page of `search`
must be the first ten of the complete ranking, over an index of several segments.
"""

from __future__ import annotations

import sys
from pathlib import Path

from archiver_plugins.index.search import close_all, parse, query_schema, search
from archiver_plugins.index.store import Capture, engine_dir, make_document, open_engine, open_or_create

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from index_pages import pages, vocabulary

PAGES = 1_500
SEGMENT = 500


def _ranked(hits: list[tuple[float, str]]) -> tuple[list[float], list[str]]:
    """The scores, and the URLs scored above the tenth (which of equal scores make the cut
    follows the documents' order)."""
    scores = [round(score, 5) for score, _ in hits[:10]]
    cut = scores[-1] if len(scores) == 10 else -1.0
    return scores, sorted(url for score, url in hits[:10] if round(score, 5) > cut)


def test_the_first_page_is_the_top_of_the_complete_ranking(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    index, _ = open_or_create(engine_dir(archive))
    docs = [
        make_document(Capture(url, "20240501120000", 200, "text/html", "utf-8", body))
        for url, body in pages(PAGES)
    ]
    for start in range(0, PAGES, SEGMENT):
        for doc in docs[start : start + SEGMENT]:
            index.add(doc)
        index.commit()
    index.close()
    hosts = sorted({str(doc["url"]).split("/")[2] for doc in docs})[:3]
    words = vocabulary()[20:80]
    differ = []
    index = open_engine(archive)
    try:
        for host in hosts:
            for word in words:
                text = f"site:{host} {word}"
                complete = index.search(parse(query_schema(), text), {}, None, PAGES, float("inf"))
                expected = _ranked([(found.score, found.fields["url"]) for found in complete.found])
                first = search(archive, text, limit=10, with_snippets=False)
                if _ranked([(hit.score, hit.url) for hit in first.hits]) != expected:
                    differ.append(text)
                assert first.total == complete.total == len(complete.found), text
    finally:
        index.close()
        close_all()
    assert not differ, differ
