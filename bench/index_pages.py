"""Deterministic generated pages for the index benchmark: documentation-like HTML.

Each page has a site header, a navigation menu and a footer repeated on every page
(what extraction should leave out), a title, headings and paragraphs whose words follow
a Zipf-like distribution over a fixed vocabulary; one page in twenty is in Chinese.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

_SYLLABLES = [
    "ba",
    "be",
    "bi",
    "bo",
    "bu",
    "ca",
    "ce",
    "ci",
    "co",
    "cu",
    "da",
    "de",
    "di",
    "do",
    "du",
    "fa",
    "fe",
    "fi",
    "fo",
    "ga",
    "ge",
    "gi",
    "go",
    "ha",
    "he",
    "hi",
    "ho",
    "ka",
    "ke",
    "ki",
    "ko",
    "la",
    "le",
    "li",
    "lo",
    "lu",
    "ma",
    "me",
    "mi",
    "mo",
    "mu",
    "na",
    "ne",
    "ni",
    "no",
    "nu",
    "pa",
    "pe",
    "pi",
    "po",
    "ra",
    "re",
    "ri",
    "ro",
    "sa",
    "se",
    "si",
    "so",
    "ta",
    "te",
    "ti",
    "to",
    "tu",
    "va",
    "ve",
    "vi",
    "vo",
    "za",
    "ze",
    "zi",
    "zo",
    "an",
    "en",
    "in",
    "on",
    "er",
    "or",
    "al",
    "el",
    "il",
    "ar",
]
_COMMON = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "that",
    "with",
    "as",
    "on",
    "by",
    "this",
    "be",
    "are",
    "from",
    "it",
    "an",
    "or",
    "at",
    "not",
    "can",
    "function",
    "value",
    "queue",
    "event",
    "loop",
    "async",
    "await",
    "task",
    "server",
    "client",
    "request",
    "response",
    "data",
    "file",
    "index",
    "search",
    "page",
    "archive",
    "crawl",
    "link",
    "python",
    "module",
    "class",
    "method",
    "object",
]
_HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你说下过"


def vocabulary(size: int = 20_000, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    words = list(_COMMON)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _sentence(rng: random.Random, words: list[str], weights: list[float], n: int) -> str:
    chosen = rng.choices(words, cum_weights=weights, k=n)
    return " ".join(chosen).capitalize() + "."


def _chinese(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_HAN) for _ in range(n)) + "。"


def pages(count: int, seed: int = 7, mean_words: int = 900) -> Iterator[tuple[str, bytes]]:
    """(url, html bytes) for `count` pages."""
    rng = random.Random(seed)
    words = vocabulary()
    cumulative: list[float] = []
    total = 0.0
    for rank in range(len(words)):
        total += 1.0 / (rank + 1)
        cumulative.append(total)
    nav = "".join(f'<li><a href="/section/{i}/">{words[40 + i]}</a></li>' for i in range(40))
    chrome_top = f"<header><h2>Example Docs</h2><form><input name=q></form></header><nav><ul>{nav}</ul></nav>"
    chrome_bottom = "<footer>Copyright Example. Built with a generator. Privacy. Terms.</footer>"
    for number in range(count):
        target = max(50, int(rng.lognormvariate(0, 0.6) * mean_words))
        title = _sentence(rng, words, cumulative, rng.randint(2, 6)).rstrip(".")
        parts: list[str] = [f"<h1>{title}</h1>"]
        written = 0
        chinese = number % 20 == 19
        while written < target:
            if rng.random() < 0.15:
                parts.append(f"<h2>{_sentence(rng, words, cumulative, 3).rstrip('.')}</h2>")
            if chinese:
                parts.append("<p>" + _chinese(rng, 60) + "</p>")
                written += 30
            else:
                length = rng.randint(20, 80)
                sentences = " ".join(
                    _sentence(rng, words, cumulative, rng.randint(5, 20)) for _ in range(length // 10)
                )
                parts.append(f"<p>{sentences}</p>")
                written += length
            if rng.random() < 0.1:
                parts.append("<pre><code>for item in queue: await process(item)</code></pre>")
        html = (
            f"<!doctype html><html><head><meta charset=utf-8><title>{title} — Example Docs</title>"
            f'<meta name="description" content="{title}"><script>var x = 1;</script>'
            f"<style>body {{ margin: 0 }}</style></head><body>{chrome_top}"
            f"<main>{''.join(parts)}</main>{chrome_bottom}</body></html>"
        )
        yield f"http://docs{number % 3}.example.test/page/{number}.html", html.encode("utf-8")
