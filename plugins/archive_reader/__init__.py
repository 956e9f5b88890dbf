"""The archive reader: what an archive holds, read back (no hooks: a library the plugins share).

WARC, ARC and WACZ files read record by record within bounded memory (members.py), their
captures found through the CDXJ lines beside them or an index made on the fly (cdxj.py,
reader.py), payload digests compared however a tool spelled them (digests.py), a stored
body decoded as it was served (payload.py), other tools' files brought into an archive
(importing.py), and what changed between two crawls of an archive (changes.py).  The
`warc` plugin writes what this reads; `index`, `mirror`, `web` and `qa` read through it, so
switching the `warc` plugin off leaves them able to read an archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.api import lazy_attributes

if TYPE_CHECKING:
    from .capture import Capture
    from .reader import MissingOriginal, StoredResponse, WarcArchive, open_archive

__all__ = ["Capture", "MissingOriginal", "StoredResponse", "WarcArchive", "open_archive"]

# Every command line imports the plugins that import this package: warcio and the
# decoders load with the first archive read.
__getattr__ = lazy_attributes(
    __name__,
    {
        "Capture": ".capture",
        "MissingOriginal": ".reader",
        "StoredResponse": ".reader",
        "WarcArchive": ".reader",
        "open_archive": ".reader",
    },
)
