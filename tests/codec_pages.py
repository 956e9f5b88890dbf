"""The pages of `tests/data/index-whoosh3`: bench pages and the odd ones (Japanese and
Chinese text, a word repeated thousands of times, a phrase past position 70,000).

The index there was written by the release before the compact codec, in whoosh 3's format:

    from archiver_plugins.index.segment import SegmentBuilder
    from archiver_plugins.index.store import create_index, make_document
    ix = create_index(FOLDER)
    docs = [make_document(c, max_chars=1_000_000) for c in fixture_captures()]
    for part in (docs[:5], docs[5:]):
        writer = SegmentBuilder(ix)
        for doc in part:
            writer.add_document(**doc)
        writer.commit(merge=False)
"""

from __future__ import annotations

import sys
from pathlib import Path

from archiver_plugins.index.store import Capture

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from index_pages import pages as bench_pages

URL = "http://example.test/"


def fixture_captures() -> list[Capture]:
    def page(path: str, body: str, title: str = "") -> Capture:
        html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
        return Capture(URL + path, "20240501120000", 200, "text/html", "utf-8", html.encode())

    return [
        *(Capture(url, "20240501120000", 200, "text/html", "utf-8", body) for url, body in bench_pages(6)),
        page("ja", "<p>東京の天気。今日は晴れです。ひらがなとカタカナ。</p>", "日本語"),
        page("zh", "<p>中文搜索引擎的索引。我们在这里测试中文分词。</p>", "中文"),
        page("repeat", "<p>" + "echo " * 3000 + "queue queue event loop" + "</p>", "echo echo"),
        page("far", "<p>" + "filler " * 20_000 + "event loop far away</p>", "far"),
        page("mixed", "<p>asyncio.run() 3.14 naïve café Straße ﬁle İstanbul</p>", "Mixed"),
    ]
