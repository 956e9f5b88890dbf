"""The one-pass analyzer gives exactly the terms, positions and offsets of the filter chain."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest
from archiver_plugins.index import schema
from archiver_plugins.index.schema import (
    OnePassAnalyzer,
    chain_plain_analyzer,
    chain_text_analyzer,
    plain_analyzer,
    text_analyzer,
)
from archiver_plugins.markup.text import extract

from bench import sitegen

CHINESE = (
    "全文搜索是一种将文件中所有文本与搜索项匹配的文字资料检索方法。"
    "Python编程语言的标准库包含asyncio模块，用于编写并发代码。中 文"
)
JAPANESE = (
    "東京タワーは、東京都港区芝公園にある総合電波塔。ウェブ・アーカイブ（Web archive）とは、"
    "ワールド・ワイド・ウェブの一部を収集し保存すること。ｶﾀｶﾅ半角も含む。"
)
ODD = "The a*b **x 3.14.15 a.b. İstanbul ǅemal ÀÉÎ of OF the_end THE queue's 'quoted' x² ½ ﬁle ß"
CALLS: list[dict[str, Any]] = [
    {},
    {"positions": True},
    {"chars": True},
    {"positions": True, "chars": True},
    {"positions": True, "boosts": True, "mode": "index"},
    {"mode": "query"},
    {"positions": True, "chars": True, "start_pos": 5, "start_char": 100},
    {"positions": True, "removestops": False},  # as the highlighter calls: through the chain
    {"tokenize": False},
    {"no_morph": True},
]


def stream(analyzer: Callable[..., Any], text: str, call: dict[str, Any]) -> list[tuple[Any, ...]]:
    found = []
    for token in analyzer(text, **call):
        found.append(
            (
                token.text,
                token.pos if call.get("positions") else None,
                (token.startchar, token.endchar) if call.get("chars") else None,
                token.stopped,
                token.boost,
            )
        )
    return found


def bench_texts(pages: int) -> list[str]:
    """Title, headings and body text of the benchmark site's first pages, and their raw HTML."""
    site = sitegen.build(pages)
    texts = []
    for i in range(pages):
        html = sitegen.render_page(site, i)
        found = extract(html.encode(), "text/html", "utf-8", 200_000)
        texts += [found.title, found.headings, found.text, html[:2000]]
    return texts


@pytest.mark.parametrize(
    ("new", "old"), [(text_analyzer, chain_text_analyzer), (plain_analyzer, chain_plain_analyzer)]
)
def test_one_pass_equals_the_chain_on_bench_pages_and_cjk_text(
    new: Callable[[], Any], old: Callable[[], Any]
) -> None:
    one_pass, chain = new(), old()
    texts = [*bench_texts(40), CHINESE, JAPANESE, ODD, f"{ODD} {CHINESE} {JAPANESE}", "", "the of a"]
    compared = 0
    for call in CALLS:
        for text in texts:
            expected = stream(chain, text, call)
            assert stream(one_pass, text, call) == expected, (call, text[:80])
            compared += len(expected)
    assert compared > 100_000


def test_cjk_text_still_becomes_bigrams() -> None:
    terms = [t.text for t in text_analyzer()(CHINESE)]
    assert "全文" in terms and "文搜" in terms and "搜索" in terms and "python" in terms
    terms = [t.text for t in text_analyzer()(JAPANESE)]
    assert "東京" in terms and "タワ" in terms and "archiv" in terms


def test_the_memo_is_bounded_and_forgets_nothing_it_should_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "MEMO_SIZE", 50)
    analyzer, chain = text_analyzer(), chain_text_analyzer()
    text = " ".join(f"word{i} runs{i % 7} 中文{i}" for i in range(400))
    assert stream(analyzer, text, {"positions": True}) == stream(chain, text, {"positions": True})
    assert len(analyzer._memo) <= 50


def test_pickled_with_the_schema_without_its_memo() -> None:
    analyzer = text_analyzer()
    list(analyzer("many words to remember"))
    assert "remember" not in str(pickle.dumps(analyzer))
    copy = pickle.loads(pickle.dumps(analyzer))
    assert isinstance(copy, OnePassAnalyzer) and copy._memo is analyzer._memo  # one per process
    assert stream(copy, CHINESE, {"positions": True}) == stream(analyzer, CHINESE, {"positions": True})
    assert copy == analyzer  # whoosh compares analyzers as their chains
