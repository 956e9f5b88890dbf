"""The tier policy over a crawl's commits up to a million pages: how often a page is merged
and how many segments a search opens (the merges themselves: `test_index_segments.py`,
`test_index_builder.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from archiver_plugins.index import tiers
from archiver_plugins.index.tiers import full_tier, merge_tiers


class Layout:
    """A segment as the policy sees it: its live documents, and how many times the page
    merged most often in it was merged."""

    def __init__(self, docs: int, merges: int = 0) -> None:
        self.docs = docs
        self.merges = merges

    def doc_count(self) -> int:
        return self.docs


def commits(
    monkeypatch: pytest.MonkeyPatch, segments: list[Layout], pages: int, per_commit: int
) -> tuple[list[Layout], int, list[int]]:
    """(the segments after `pages` more pages committed `per_commit` at a time, the most
    segments held after a commit, the sizes of the groups merged)."""
    groups: list[int] = []

    def merge(writer: Any, group: Sequence[Layout]) -> Layout:
        groups.append(len(group))
        return Layout(sum(member.docs for member in group), max(member.merges for member in group) + 1)

    monkeypatch.setattr(tiers, "merge_segments", merge)
    most = 0
    for _ in range(pages // per_commit):
        segments = [*merge_tiers(None, segments), Layout(per_commit)]
        most = max(most, len(segments))
    return segments, most, groups


def test_a_million_pages_merges_each_page_once_and_keeps_under_160_segments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a crawl's writer commits segments of ~270 pages
    segments, most, groups = commits(monkeypatch, [], 1_000_000, 270)
    assert sum(segment.docs for segment in segments) == 1_000_000 // 270 * 270
    assert max(segment.merges for segment in segments) == 1  # ~270 -> ~8,600 pages, no more
    assert most <= 160
    assert max(groups) <= tiers.SEGMENTS_PER_TIER  # a merge's buffers: two a segment

    # commits of a few pages (a slow crawl): merged into ~270s, then ~8,600s, no further
    segments, most, groups = commits(monkeypatch, [], 300_000, 10)
    assert max(segment.merges for segment in segments) == 2
    assert most <= 2 * tiers.SEGMENTS_PER_TIER + tiers.TOP_SEGMENTS


def test_past_a_million_pages_the_top_tier_merges_its_smallest(monkeypatch: pytest.MonkeyPatch) -> None:
    segments, most, groups = commits(monkeypatch, [], 1_500_000, 8_640)
    big = [segment.docs for segment in segments if segment.docs > 8_640]
    # 128 segments of 8,640 pages (~1.1 million) merged 32 into one; 31 more, the next 32
    # smallest: the ~276,000-page segment is not merged again
    assert big == [tiers.SEGMENTS_PER_TIER * 8_640] * 2
    assert most <= tiers.TOP_SEGMENTS
    assert groups == [tiers.SEGMENTS_PER_TIER] * 2


def test_segments_of_an_earlier_policy_are_kept_or_merged_a_tier_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a ~276,000-page segment and full tiers of ~8,600s as 32 a tier left them: kept
    earlier = [Layout(276_480, 2), *(Layout(8_640, 1) for _ in range(31)), *(Layout(270) for _ in range(31))]
    segments, _, groups = commits(monkeypatch, list(earlier), 540, 270)
    assert groups == [tiers.SEGMENTS_PER_TIER]  # the 270s' tier, full after the first commit
    assert [segment.docs for segment in segments[:32]] == [276_480] + [8_640] * 31
    assert [segment.docs for segment in segments[32:]] == [8_640, 270]
    assert segments[0].docs == 276_480 and segments[0].merges == 2

    # more small segments than a tier holds: merged 32 at a time, never more
    segments, _, groups = commits(monkeypatch, [Layout(270) for _ in range(100)], 270, 270)
    assert groups == [32, 32, 32]
    assert len(segments) == 3 + 4 + 1


def test_a_reindex_worker_merges_its_own_segments_by_the_same_policy() -> None:
    """`parallel.Workers` merges `per_tier` of a tier at a time (3 in its tests)."""
    small = [Layout(5) for _ in range(3)]  # tier 1 in threes
    top = [Layout(9 + n) for n in range(tiers.TOP_SEGMENTS)]  # 9 pages and more: the top tier
    assert full_tier([*small[:2], *top[:10]], 3) == []
    assert full_tier([*top[:10], *small], 3) == small
    assert full_tier(list(reversed(top)), 3) == top[:3]  # the smallest
