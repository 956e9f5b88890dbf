"""The two scores of a replayed page against its browser capture.

Screenshot match: both PNGs are drawn, in Chromium's canvas, scaled to `COMPARE_WIDTH`
pixels wide (each keeps its aspect ratio, on a white ground as tall as the taller one);
the score is the share of pixels whose red, green and blue each differ by at most
`PIXEL_TOLERANCE` (of 255).  1.0 is identical; a page that lost its stylesheet or its
images falls by the share of the screen they covered.

Text match: the visible text of each rendered DOM (the body's text, without script,
style, noscript and template elements, whitespace collapsed) split into words; the
score is difflib's ratio of the two word sequences (2 x matching words / all words),
the first `MAX_WORDS` of each.  1.0 is the same text in the same order.
"""

from __future__ import annotations

import difflib

from selectolax.lexbor import LexborHTMLParser

COMPARE_WIDTH = 320
PIXEL_TOLERANCE = 24
MAX_WORDS = 5000
_HIDDEN = ("script", "style", "noscript", "template")

SCREEN_SCRIPT = f"""
async ([a, b]) => {{
  const load = async (data) => {{
    const image = new Image();
    image.src = 'data:image/png;base64,' + data;
    await image.decode();
    return image;
  }};
  const [one, two] = await Promise.all([load(a), load(b)]);
  const width = {COMPARE_WIDTH};
  const tall = (image) =>
    Math.max(1, Math.round(image.naturalHeight * width / Math.max(image.naturalWidth, 1)));
  const height = Math.max(tall(one), tall(two));
  const pixels = (image) => {{
    const canvas = document.createElement('canvas');
    canvas.width = width;
    canvas.height = height;
    const g = canvas.getContext('2d');
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, height);
    g.drawImage(image, 0, 0, width, tall(image));
    return g.getImageData(0, 0, width, height).data;
  }};
  const p = pixels(one), q = pixels(two);
  let same = 0;
  for (let i = 0; i < p.length; i += 4) {{
    if (Math.abs(p[i] - q[i]) <= {PIXEL_TOLERANCE} && Math.abs(p[i + 1] - q[i + 1]) <= {PIXEL_TOLERANCE}
        && Math.abs(p[i + 2] - q[i + 2]) <= {PIXEL_TOLERANCE}) same++;
  }}
  return same / (width * height);
}}
"""


def text_of(dom: str) -> list[str]:
    """The words of the visible text of a rendered document, at most `MAX_WORDS`."""
    tree = LexborHTMLParser(dom)
    for node in tree.css(",".join(_HIDDEN)):
        node.decompose()
    body = tree.body
    text = body.text(separator=" ") if body is not None else ""
    return text.split()[:MAX_WORDS]


def text_score(capture: list[str], replay: list[str]) -> float:
    if not capture and not replay:
        return 1.0
    return round(difflib.SequenceMatcher(None, capture, replay, autojunk=False).ratio(), 4)
