"""The 48x48 PNG a ZIM shows as its icon ("Illustration"), made from the site's own icon.

A site's icon is an ICO, a PNG of any size, an SVG or nothing at all; ZIM readers want
exactly a 48x48 PNG.  Pillow (in the extra ``zim``) decodes and scales it; an icon it
cannot read, or none, gives a plain square, since every ZIM must have one.
"""

from __future__ import annotations

import io
import warnings

__all__ = ["ICON_SIZE", "illustration"]

ICON_SIZE = 48
MAX_ICON_BYTES = 1 << 20
MAX_ICON_PIXELS = 4096 * 4096
"""Larger images are refused before they are decoded (an icon is never that large)."""
_PLAIN = (0x44, 0x66, 0x88, 255)


def illustration(icon: bytes | None) -> bytes:
    """`icon` scaled to a 48x48 PNG, or a plain square when there is none or it cannot be read."""
    from PIL import Image

    image = None
    if icon is not None and len(icon) <= MAX_ICON_BYTES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                found = Image.open(io.BytesIO(icon))
                if found.width * found.height <= MAX_ICON_PIXELS:
                    found.load()
                    image = found.convert("RGBA").resize((ICON_SIZE, ICON_SIZE), Image.Resampling.LANCZOS)
        except Exception:  # Pillow raises many kinds for a damaged or unknown image
            image = None
    if image is None:
        image = Image.new("RGBA", (ICON_SIZE, ICON_SIZE), _PLAIN)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
