"""`Capture`: one archived HTTP response as an index knows it (a CDXJ line)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .surt import surt

REVISIT_MIME = "warc/revisit"


@dataclass(frozen=True, slots=True)
class Capture:
    """Where one response (or revisit) record lives and what it says about itself.

    `timestamp` is the record's WARC-Date as 14 digits (``YYYYMMDDhhmmss``); `status`
    is None for records without HTTP headers; `mime` is the media type without
    parameters (``warc/revisit`` for a revisit, as CDXJ writes it); `digest` is the
    WARC-Payload-Digest (``sha1:BASE32``); `offset` and `length` locate the record
    (its whole gzip member) in `filename`, a file name relative to the WARC folder.
    """

    url: str
    timestamp: str
    status: int | None
    mime: str | None
    digest: str | None
    length: int
    offset: int
    filename: str

    @property
    def urlkey(self) -> str:
        return surt(self.url)

    @property
    def is_revisit(self) -> bool:
        return self.mime == REVISIT_MIME

    def to_cdxj(self) -> str:
        """The CDXJ line (no newline) in the field order cdxj-indexer and pywb use."""
        fields: dict[str, Any] = {"url": self.url}
        if self.mime is not None:
            fields["mime"] = self.mime
        if self.status is not None:
            fields["status"] = str(self.status)
        if self.digest is not None:
            fields["digest"] = self.digest
        fields["length"] = str(self.length)
        fields["offset"] = str(self.offset)
        fields["filename"] = self.filename
        return f"{self.urlkey} {self.timestamp} {json.dumps(fields)}"

    @classmethod
    def from_cdxj(cls, line: str) -> Capture:
        """Parse one CDXJ line; raises ValueError when it is not one."""
        _key, timestamp, body = line.rstrip("\n").split(" ", 2)
        fields = json.loads(body)
        if not isinstance(fields, dict):
            raise ValueError("CDXJ fields are not a JSON object")
        return cls(
            url=str(fields["url"]),
            timestamp=timestamp,
            status=parse_status(fields.get("status")),
            mime=fields.get("mime"),
            digest=fields.get("digest"),
            length=int(fields["length"]),
            offset=int(fields["offset"]),
            filename=str(fields["filename"]),
        )


def parse_status(value: object) -> int | None:
    """An HTTP status from an index field or status line; None when there is none."""
    try:
        return int(str(value).strip().split(" ", 1)[0])
    except ValueError:
        return None
