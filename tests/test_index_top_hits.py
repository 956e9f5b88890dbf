"""A search's first page holds the best-scored pages of the whole result set.

whoosh's top-N collector prunes the branches of an OR whose estimated best score cannot
reach the current tenth; the estimate comes from byte-quantized field lengths, so on bench
pages it pruned real hits (`site:HOST word` lost a page of its top 10).  The first page of
`search` must be the first ten of the complete ranking.
"""

from __future__ import annotations

import sys
from pathlib import Path

from archiver_plugins.index.search import close_all, parse, search
from archiver_plugins.index.segment import SegmentBuilder
from archiver_plugins.index.store import Capture, create_index, make_document, open_index, whoosh_dir

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
    folder = whoosh_dir(archive)
    folder.mkdir(parents=True)
    ix = create_index(folder)
    docs = [
        make_document(Capture(url, "20240501120000", 200, "text/html", "utf-8", body))
        for url, body in pages(PAGES)
    ]
    for start in range(0, PAGES, SEGMENT):
        writer = SegmentBuilder(ix)
        for doc in docs[start : start + SEGMENT]:
            writer.add_document(**doc)
        writer.commit(merge=False)
    ix.close()
    hosts = sorted({str(doc["url"]).split("/")[2] for doc in docs})[:3]
    words = vocabulary()[20:80]
    differ = []
    index = open_index(archive)
    try:
        with index.searcher() as searcher:
            for host in hosts:
                for word in words:
                    text = f"site:{host} {word}"
                    complete = searcher.search(parse(searcher.schema, text), limit=None)
                    expected = _ranked([(hit.score, hit["url"]) for hit in complete])
                    first = search(archive, text, limit=10, with_snippets=False)
                    if _ranked([(hit.score, hit.url) for hit in first.hits]) != expected:
                        differ.append(text)
                    assert first.total == len(complete), text
    finally:
        index.close()
        close_all()
    assert not differ, differ
