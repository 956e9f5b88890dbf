"""crawl.stash: typed per-run room for plugins, one key object per thing kept."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from archiver.config import Config
from archiver.model import Crawl
from archiver.stash import Stash, StashKey

COUNTS = StashKey[collections.Counter[str]]()
OTHER_COUNTS = StashKey[collections.Counter[str]]()
NAME = StashKey[str]()


def test_a_value_is_kept_under_its_key_and_only_there() -> None:
    stash = Stash()
    stash[COUNTS] = collections.Counter(a=1)
    stash[COUNTS]["a"] += 1
    assert stash[COUNTS] == {"a": 2}
    assert COUNTS in stash and OTHER_COUNTS not in stash
    with pytest.raises(KeyError):
        stash[OTHER_COUNTS]
    assert stash.get(OTHER_COUNTS, None) is None
    assert stash.setdefault(NAME, "first") == "first"
    assert stash.setdefault(NAME, "second") == "first"
    assert len(stash) == 2
    assert stash.pop(NAME, "gone") == "first" and stash.pop(NAME, "gone") == "gone"
    del stash[COUNTS]
    assert len(stash) == 0


def test_each_crawl_has_a_stash_of_its_own(tmp_path: Path) -> None:
    first = Crawl(config=Config(), archive=tmp_path, roots=())
    second = Crawl(config=Config(), archive=tmp_path, roots=())
    first.stash[NAME] = "first"
    assert NAME not in second.stash
