"""The crawl's memo of links already handled: bounded, and holding most links of a large site."""

from __future__ import annotations

from archiver.linkmemo import LinkMemo


def test_links_added_are_known_and_others_are_not() -> None:
    memo = LinkMemo(initial_slots=1024)
    links = [f"https://example.org/page/{n}" for n in range(300)]
    for link in links:
        memo.add(link)
    assert sum(link in memo for link in links) >= 270  # a pair of slots keeps its two newest links
    assert not any(f"https://example.org/other/{n}" in memo for n in range(10_000))


def test_it_grows_as_it_fills_then_stays_at_its_size() -> None:
    memo = LinkMemo(initial_slots=1024, max_slots=1 << 16)
    links = [f"https://example.org/{n}" for n in range(30_000)]
    for link in links:
        memo.add(link)
    assert memo._slots.buffer_info()[1] == 1 << 16  # doubled past half full, up to its bound
    assert sum(link in memo for link in links) > 0.78 * len(links)
    more = [f"https://example.org/more/{n}" for n in range(200_000)]
    for link in more:
        memo.add(link)
    assert memo._slots.buffer_info()[1] == 1 << 16 and len(memo) <= 1 << 16
    # the newest links are kept (the ones a site's next pages link again), the oldest overwritten
    assert sum(link in memo for link in more[-5_000:]) > 0.9 * 5_000
    assert sum(link in memo for link in links) < 0.2 * len(links)
