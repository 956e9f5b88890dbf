"""Which pages `archiver qa` checks: the newest capture of each HTML page, a revisit included."""

from __future__ import annotations

from pathlib import Path

from archiver_plugins.qa.run import Selection, archived_pages
from archiver_plugins.replay.library import Library
from changing_site import crawl_twice

from archiver.testing import Site


async def test_a_page_whose_newest_capture_is_a_revisit_is_checked(site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "a"
    await crawl_twice(site, archive)  # /same: the same payload twice, stored the second time as a revisit
    library = Library.open([archive])
    same = site.url("/same")
    newest = max(library.handles[0].captures(same), key=lambda c: c.timestamp)
    assert newest.is_revisit
    checked = dict(archived_pages(library, Selection()))
    assert checked[same] == newest.timestamp
    assert {site.url(p) for p in ("/", "/edited", "/fresh", "/dropped")} <= set(checked)
    assert site.url("/gone") not in checked  # now 404
