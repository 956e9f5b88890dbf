"""Sizes and durations as people write them (`500M`, `2G`, `90s`, `1h30m`) and as they read them.

Sizes are binary, as wget's `-Q` and HTTrack's `-M` count them: `1K` is 1024 bytes, `1M`
1024 K; `500MB` and `500MiB` mean the same as `500M`.  Durations take `s`, `m`, `h` and `d`,
alone or in a row (`1h30m`); a bare number is bytes or seconds.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:i?b)?|b)?\s*", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])", re.IGNORECASE)
_DURATION_FACTORS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_size(text: str) -> int:
    """Bytes of `500M`, `2G`, `1.5GiB` or `1048576`; ValueError names the expected form."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise ValueError(f"expected a size such as 500M or 2G, got {text!r}")
    number, unit = found.groups()
    return int(float(number) * _SIZE_FACTORS[(unit or "").lower()])


def parse_duration(text: str) -> float:
    """Seconds of `30m`, `12h`, `1h30m`, `90s` or `90`; ValueError names the expected form."""
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(stripped)
    if not parts or _DURATION_PART.sub("", stripped).strip():
        raise ValueError(f"expected a duration such as 30m, 12h or 1h30m, got {text!r}")
    return sum(float(n) * _DURATION_FACTORS[unit.lower()] for n, unit in parts)


def human_size(n: float) -> str:
    """`n` bytes in the units `parse_size` reads (KB, MB, GB: 1024-based)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def human_duration(seconds: float) -> str:
    """`seconds` as `1h30m`, `45m`, `12s`: the form `parse_duration` reads."""
    seconds = round(max(seconds, 0.0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"
