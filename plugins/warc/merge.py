"""After `archiver merge`: the merged WARC folder made whole (closed files, a CDXJ beside each)."""

from __future__ import annotations

import logging
from pathlib import Path

from .cdxj import cdxj_path_for, index_warc, write_cdxj
from .warcfile import recover_open_files

log = logging.getLogger(__name__)


def finish_merged(folder: Path) -> None:
    """Close copies of files a killed crawl left open (cut to their last whole record), then
    index every WARC file that has no CDXJ, so look-ups never fall back to scanning."""
    if not folder.is_dir():
        return
    for path, cut in recover_open_files(folder):
        log.warning(
            "closed %s, left open by a stopped crawl (%d bytes of a partial record cut)", path.name, cut
        )
    for path in sorted(folder.iterdir()):
        if path.name.endswith((".warc.gz", ".warc")) and not cdxj_path_for(path).is_file():
            write_cdxj(cdxj_path_for(path), index_warc(path))
