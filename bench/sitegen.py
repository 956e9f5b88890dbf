"""Write a static site shaped like a real one, and the URL set a correct crawler must fetch.

The site stresses what costs a crawler time on real sites: 20-50 links a page written in every
form (absolute path, relative, `../`, fragment-only), 5-20 KB of varied text, images shared
between pages (a few with `srcset`), a stylesheet that imports another and points at images and a
font with `url()`, links to missing pages (404), 301 chains and a redirect cycle, links to other
hosts that must not be followed, and query/fragment variants of the same page (two of them equal
once canonicalized). Everything is drawn from one seeded generator, so a seed gives the same bytes.

Output folder:
    site/                 the document root
    redirects.json        {path: Location} for the 301s
    nginx-redirects.conf  the same as entries of an nginx `map $uri` block (see bench.server)
    expected.json         every URL a correct crawler fetches, with its status and kind

Command line: `python -m bench.sitegen OUT --pages N [--seed S]`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import posixpath
import random
import shutil
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import media

FORMAT_VERSION = 1
DEFAULT_SEED = 20240611


def _words(text: str) -> list[str]:
    return text.split()


# Frequent words first: drawn with a Zipf law, they dominate the text the way function words do.
COMMON_WORDS = _words("""
the of and to in is that for it as was with be by on not he this are or his from at which but
have an they you were her she there been one all we their has would when if so no what up out
more will other into them can only its time some could these two may first then do any like my
now over such our man me even most made after also did many before must through back years where
much your way well down should because each just those people how too little state good very
make world still own see men work long get here between both life being under never day same
another know while last might us great old year off come since against go came right used take
three
""")

TOPIC_WORDS = _words("""
archive harbor lantern river signal engine garden market library window thunder meadow crystal
railway bridge compass orchard canyon ledger beacon harvest monsoon glacier quarry tapestry
lighthouse workshop observatory telescope manuscript almanac atlas caravan citadel district
festival foundry gallery junction kingdom laboratory mosaic narrative pavilion quartet refinery
sanctuary terrace tributary university vineyard warehouse archipelago basin cathedral delta
estuary fjord geyser highland island jungle knoll lagoon mesa oasis peninsula ravine savanna
tundra valley volcano wetland algorithm bandwidth cache compiler database encoder firmware
gateway hashing interface kernel latency middleware network operator protocol query router
scheduler thread buffer cluster daemon endpoint frontier index journal parser queue replica
snapshot token vector crawler spider record header payload digest checksum mirror replay
budget climate economy election finance history industry justice language medicine museum
nutrition ocean policy science theatre transport weather wildlife bicycle chemistry geometry
melody orchestra painting pottery sculpture symphony textile bakery cheese coffee pepper saffron
vanilla walnut apricot barley cinnamon lentil mango nutmeg olive quince rhubarb sesame tamarind
copper granite marble silver timber velvet amber cobalt indigo saffron scarlet violet crimson
café naïve façade résumé jalapeño smörgåsbord über
""")

SECTION_NAMES = _words("""
guide reference news blog tutorials api community docs releases faq support products about
events research learn stories archive projects notes
""")

EXTERNAL_LINKS = (
    "http://external.invalid/",
    "http://external.invalid/partners.html",
    "https://www.external.invalid/about",
    "https://cdn.external.invalid/lib/docs.html",
    "http://mirror.external.invalid:8080/pub/",
    "mailto:webmaster@external.invalid",
    "javascript:void(0)",
    "tel:+15550100",
    "ftp://files.external.invalid/pub/",
)

QUERY_VARIANTS = ("?view=print", "?lang=en&view=print", "?view=print&lang=en")
FRAGMENTS = ("#top", "#section-2", "#comments", "#footnote-1")


@dataclass
class Site:
    """The site as data: each HTML page's path and links, before it is written."""

    pages: int
    seed: int
    paths: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    links: list[list[str]] = field(default_factory=list)
    images: list[list[str]] = field(default_factory=list)
    image_paths: list[str] = field(default_factory=list)
    assets: dict[str, bytes] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    nav_count: list[int] = field(default_factory=list)
    text: _Text | None = field(default=None, repr=False)
    rng: random.Random = field(default_factory=random.Random, repr=False)


def _synthetic_words(rng: random.Random, count: int) -> list[str]:
    """Pronounceable made-up words: the long tail of a vocabulary, rare enough to search for."""
    onsets = _words("b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr sh ch th")
    vowels = _words("a e i o u ai ea io ou")
    codas = ["", "", "n", "r", "s", "l", "m", "nd", "st", "rk", "x"]
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        syllables = rng.choice((2, 2, 3, 3, 4))
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables))
        word += rng.choice(codas)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class _Text:
    """Sentences drawn with Zipf word frequencies, pooled so 10,000 pages generate in seconds."""

    def __init__(self, rng: random.Random) -> None:
        self.vocabulary = COMMON_WORDS + TOPIC_WORDS + _synthetic_words(rng, 6000)
        weights = [1.0 / (rank + 1) ** 1.07 for rank in range(len(self.vocabulary))]
        self.cum_weights = list(itertools.accumulate(weights))
        self.rng = rng
        self.sentences = [self._sentence() for _ in range(6000)]

    def words(self, count: int) -> list[str]:
        return self.rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=count)

    def _sentence(self) -> str:
        words = self.words(self.rng.randint(6, 22))
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rng.choice(".....?!;")

    def paragraph(self, rare: str) -> str:
        sentences = self.rng.choices(self.sentences, k=self.rng.randint(3, 8))
        if self.rng.random() < 0.5:
            sentences.insert(self.rng.randrange(len(sentences)), f"The {rare} matters here.")
        return " ".join(sentences)


def _page_paths(rng: random.Random, pages: int, text: _Text) -> tuple[list[str], list[str]]:
    sections_count = max(1, min(len(SECTION_NAMES), pages // 250))
    sections = SECTION_NAMES[:sections_count]
    ascii_topics = [w for w in TOPIC_WORDS if w.isascii()]
    paths = ["/"] + [f"/{name}/" for name in sections]
    titles = ["Home"] + [name.capitalize() for name in sections]
    for i in range(len(paths), pages):
        first, second = rng.sample(ascii_topics, 2)
        section = sections[i % sections_count]
        slug = f"{first}-{second}-{i}"
        if i % 3 == 0:
            paths.append(f"/{section}/part-{i % 7}/{slug}.html")
        else:
            paths.append(f"/{section}/{slug}.html")
        tail = text.words(1)[0]
        titles.append(f"{first.capitalize()} {second} and {tail} ({i})")
    return paths[:pages], titles[:pages]


def _href(rng: random.Random, source: str, target: str) -> str:
    """The same target written the many ways real pages write it."""
    roll = rng.random()
    if roll < 0.55 or target.startswith("/?"):
        return target
    base = source if source.endswith("/") else posixpath.dirname(source) + "/"
    path, sep, rest = target.partition("?")
    rel = posixpath.relpath(path, base)
    if path.endswith("/"):
        rel = "./" if rel == "." else rel + "/"
    return rel + sep + rest


def build(pages: int = 10_000, seed: int = DEFAULT_SEED) -> Site:
    """Decide every path and link of the site without writing anything."""
    if pages < 10:
        raise ValueError("a site needs at least 10 pages")
    rng = random.Random(seed)
    text = _Text(rng)
    site = Site(pages=pages, seed=seed, text=text, rng=rng)
    site.paths, site.titles = _page_paths(rng, pages, text)
    paths = site.paths
    sections = [p for p in paths[1:] if p.count("/") == 2 and p.endswith("/")]
    nav = ["/", *sections[:8]]
    popular = list(range(min(pages, 200)))
    popular_weights = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(popular))))

    # Assets: images shared between pages, a few @2x variants for srcset.
    image_count = max(10, pages // 10)
    kinds = (("png", media.png), ("jpg", media.jpeg), ("gif", media.gif))
    for k in range(image_count):
        ext, make = kinds[k % 3]
        path = f"/img/{rng.choice(TOPIC_WORDS[:40])}-{k}.{ext}"
        site.image_paths.append(path)
        site.assets[path] = make(rng, rng.randint(800, 24_000))
        if k % 25 == 0:
            site.assets[path.replace(f".{ext}", f"@2x.{ext}")] = make(rng, 30_000)
    css_images = ["/img/bg-texture.png", "/img/print-logo.png"]
    for path in css_images:
        site.assets[path] = media.png(rng, 4000)
    site.assets["/fonts/body.woff2"] = media.woff2(rng, 18_000)
    site.assets["/favicon.ico"] = media.ico(rng, 1100)
    site.assets["/static/site.css"] = (
        b'@import url("print.css") print;\n'
        b'@font-face { font-family: Body; src: url("../fonts/body.woff2") format("woff2"); }\n'
        b"body { font: 16px/1.5 Body, serif; background: #fff url(../img/bg-texture.png); }\n"
        b"nav a { margin-right: 1em; } .lede { font-size: 1.2em; } img { max-width: 100%; }\n"
    )
    site.assets["/static/print.css"] = (
        b"header { background: url('/img/print-logo.png') no-repeat; } nav { display: none; }\n"
    )
    site.assets["/static/site.js"] = (
        b"document.addEventListener('DOMContentLoaded', () => {\n"
        b"  document.body.classList.add('ready');\n});\n"
    )

    # Per-page links: a 4-ary tree keeps every page reachable within ~log4(N) hops, the rest is
    # a mix of uniform and popular targets like real cross-linking.
    site.links = [[] for _ in range(pages)]
    site.images = [[] for _ in range(pages)]
    for i, source in enumerate(paths):
        header = [p for p in nav if p != source]
        targets: list[str] = []
        children = [c for c in range(4 * i + 1, 4 * i + 5) if c < pages]
        targets += [paths[c] for c in children]
        if i:
            targets.append(paths[(i - 1) // 4])
        wanted = rng.randint(20, 50) - len(header)
        while len(targets) < wanted:
            if rng.random() < 0.3:
                j = rng.choices(popular, cum_weights=popular_weights)[0]
            else:
                j = rng.randrange(pages)
            if j != i:
                targets.append(paths[j])
        hrefs = [_href(rng, source, t) for t in targets]
        if rng.random() < 0.4:
            k = rng.randrange(len(hrefs))
            hrefs[k] += rng.choice(FRAGMENTS)
        if rng.random() < 0.3:
            hrefs.append(rng.choice(FRAGMENTS))
        hrefs += rng.sample(EXTERNAL_LINKS, rng.randint(0, 2))
        rng.shuffle(hrefs)
        site.links[i] = header + hrefs
        site.nav_count.append(len(header))
        first = site.image_paths[i % image_count]
        site.images[i] = [first, *rng.sample(site.image_paths, rng.randint(0, 2))]

    def place(href: str) -> None:
        site.links[rng.randrange(pages)].append(href)

    # Query variants: the three of QUERY_VARIANTS, the last two equal once canonicalized.
    for _ in range(max(1, pages // 100)):
        target = paths[rng.randrange(1, pages)]
        for variant in QUERY_VARIANTS:
            place(target + variant)
    # 404s, 301 chains of two and of one, one redirect cycle.
    for k in range(max(1, pages // 100)):
        site.missing.append(f"/missing/{rng.choice(TOPIC_WORDS[:60])}-{k}.html")
        place(site.missing[-1])
        target = paths[rng.randrange(1, pages)]
        site.redirects[f"/old/{k}.html"] = f"/moved/{k}.html"
        site.redirects[f"/moved/{k}.html"] = target
        place(f"/old/{k}.html")
    for k in range(max(1, pages // 200)):
        site.redirects[f"/go/{k}"] = paths[rng.randrange(1, pages)]
        place(f"/go/{k}")
    site.redirects["/loop/a.html"] = "/loop/b.html"
    site.redirects["/loop/b.html"] = "/loop/a.html"
    place("/loop/a.html")
    return site


def render_page(site: Site, i: int) -> str:
    """One page: head with requisites, nav, headed sections of text with the links inline."""
    assert site.text is not None
    text, rng = site.text, site.rng
    title = site.titles[i]
    target_size = rng.randint(5_000, 20_000)
    rare = text.words(1)[0]
    nav = site.links[i][: site.nav_count[i]]
    links = site.links[i][site.nav_count[i] :]
    nav_links = [f'<a href="{href}">{href.strip("/") or "home"}</a>' for href in nav]
    parts = [
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n",
        f"<title>{title}</title>\n",
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<link rel="stylesheet" href="/static/site.css">\n',
        '<link rel="icon" href="/favicon.ico">\n',
        '<script src="/static/site.js" defer></script>\n',
        '</head>\n<body>\n<header id="top"><nav>',
        *nav_links,
        "</nav></header>\n<main>\n",
        f"<h1>{title}</h1>\n",
    ]
    for n, image in enumerate(site.images[i]):
        double = image.rsplit(".", 1)[0] + "@2x." + image.rsplit(".", 1)[1]
        srcset = f' srcset="{double} 2x"' if double in site.assets else ""
        parts.append(f'<figure><img src="{image}"{srcset} alt="figure {n}"></figure>\n')
    size = sum(len(p) for p in parts)
    section = 1
    while size < target_size or links:
        if section == 1 or rng.random() < 0.25:
            heading = " ".join(text.words(rng.randint(2, 5))).capitalize()
            parts.append(f'<h2 id="section-{section}">{heading}</h2>\n')
            section += 1
        paragraph = text.paragraph(rare)
        if links:
            words = paragraph.split(" ")
            count = min(len(links), rng.randint(1, 4), len(words))
            for at in rng.sample(range(len(words)), count):
                words[at] = f'<a href="{links.pop()}">{words[at]}</a>'
            paragraph = " ".join(words)
        chunk = f"<p>{paragraph}</p>\n"
        parts.append(chunk)
        size += len(chunk)
    parts.append('</main>\n<footer id="comments"><p id="footnote-1">')
    parts.append(f"Page {i} of {site.pages}. Keyword: {rare}.</p></footer>\n</body>\n</html>\n")
    return "".join(parts)


def expected_urls(site: Site) -> dict[str, Any]:
    """Breadth-first walk of the generated graph: what a correct crawler fetches from `/`.

    Page requisites count (a crawler that archives must fetch them); hosts other than the
    site's, mailto:/javascript:/tel:/ftp: and fragments do not.
    """
    by_path = {path: i for i, path in enumerate(site.paths)}
    css_refs = {
        "/static/site.css": ["/static/print.css", "/fonts/body.woff2", "/img/bg-texture.png"],
        "/static/print.css": ["/img/print-logo.png"],
    }
    missing = set(site.missing)
    urls: dict[str, dict[str, Any]] = {}
    queue = deque(["/"])
    from_html: set[str] = set()

    def resolve(base: str, href: str) -> str | None:
        href = href.split("#", 1)[0]
        if ":" in href.split("/", 1)[0] or href.startswith("//"):
            return None
        if not href:
            return base
        path, sep, query = href.partition("?")
        if not path.startswith("/"):
            directory = base.split("?", 1)[0]
            directory = directory if directory.endswith("/") else posixpath.dirname(directory) + "/"
            trailing = path.endswith("/") or path in (".", "./")
            path = posixpath.normpath(posixpath.join(directory, path))
            if trailing and path != "/":
                path += "/"
        return path + sep + query

    def visit(url: str, from_css: bool = False) -> None:
        if url not in urls:
            urls[url] = {}
            queue.append(url)
        if not from_css:
            from_html.add(url)

    while queue:
        url = queue.popleft()
        path = url.split("?", 1)[0]
        if url in site.redirects:
            urls[url] = {"status": 301, "kind": "redirect", "location": site.redirects[url]}
            visit(site.redirects[url])
        elif path in by_path:
            i = by_path[path]
            urls[url] = {"status": 200, "kind": "page"}
            requisites = ["/static/site.css", "/favicon.ico", "/static/site.js"]
            for image in site.images[i]:
                requisites.append(image)
                double = image.rsplit(".", 1)[0] + "@2x." + image.rsplit(".", 1)[1]
                if double in site.assets:
                    requisites.append(double)
            for requisite in requisites:
                visit(requisite)
            for href in site.links[i]:
                target = resolve(url, href)
                if target is not None:
                    visit(target)
        elif path in site.assets:
            urls[url] = {"status": 200, "kind": "asset"}
            for ref in css_refs.get(path, []):
                visit(ref, from_css=True)
        else:
            assert path in missing, url
            urls[url] = {"status": 404, "kind": "missing"}
    duplicates = []
    for url in urls:
        if url.endswith(QUERY_VARIANTS[2]):
            other = url[: -len(QUERY_VARIANTS[2])] + QUERY_VARIANTS[1]
            if other in urls:
                duplicates.append([other, url])
    offsite = sorted({h for links in site.links for h in links if ":" in h.split("/", 1)[0]})
    return {
        "format": FORMAT_VERSION,
        "pages": site.pages,
        "seed": site.seed,
        "root": "/",
        "count": len(urls),
        "html_pages": sum(1 for u in urls.values() if u["kind"] == "page"),
        "urls": dict(sorted(urls.items())),
        "canonical_duplicates": sorted(duplicates),
        "css_only": sorted(u for u in urls if u not in from_html),
        "offsite": offsite,
    }


def _file_for(root: Path, path: str) -> Path:
    return root / (path.lstrip("/") + "index.html" if path.endswith("/") else path.lstrip("/"))


def generate(out_dir: str | Path, pages: int = 10_000, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write the site under `out_dir` (replacing what was there); return the expected URL set."""
    out = Path(out_dir)
    site = build(pages, seed)
    root = out / "site"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    made: set[Path] = set()
    for i, path in enumerate(site.paths):
        file = _file_for(root, path)
        if file.parent not in made:
            file.parent.mkdir(parents=True, exist_ok=True)
            made.add(file.parent)
        file.write_text(render_page(site, i), encoding="utf-8")
    for path, data in sorted(site.assets.items()):
        file = _file_for(root, path)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
    (out / "redirects.json").write_text(json.dumps(site.redirects, indent=1, sort_keys=True))
    (out / "nginx-redirects.conf").write_text(
        "".join(f"{src} {dst};\n" for src, dst in sorted(site.redirects.items()))
    )
    expected = expected_urls(site)
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sitegen", description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="output folder (site/ and the JSON files go there)")
    parser.add_argument("--pages", type=int, default=10_000, help="HTML pages (default 10,000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    expected = generate(args.out, args.pages, args.seed)
    elapsed = time.perf_counter() - started
    print(
        f"{args.out}: {expected['html_pages']} pages, {expected['count']} URLs to fetch, "
        f"written in {elapsed:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
