"""URL -> relative file path of the mirror: safe on every OS, deterministic, collision-free.

wget and HTTrack derive file names from URLs almost literally, which breaks in three ways:
names that some OS refuses (``CON``, ``a:b``, trailing dots, 300-byte names), names that
escape the output folder (``..``, ``%2e%2e%2f``, backslashes), and URLs that need the same
name (``/a`` and ``/a/b``, ``/A`` and ``/a`` on a case-insensitive disk).  Here every name
is built from a short list of rules and then `allocate` settles collisions over the whole
set of URLs, sorted, so the same archive always gives the same tree.

Rules for one path segment:

* percent-escapes are decoded only to characters that are harmless in a file name
  (letters, digits, ``-._~!$&'()+,;=@`` and printable non-ASCII as UTF-8); ``%2F``,
  ``%5C``, ``%00``, ``%25``, controls and the like stay escaped (a literal ``%`` in the name);
* characters Windows or macOS refuse (``<>:"/\\|?*`` and controls) are written ``%XX``;
* ``.`` and ``..`` (however they were spelled) become ``%2E`` / ``%2E%2E``;
* a trailing dot or space is escaped (Windows drops them), reserved device names
  (``CON``, ``nul.txt``, ``COM1``...) get a ``_`` after the stem;
* a name over 255 bytes is cut and ends in ``~`` and a hash of the whole name.

The query string is kept in the file name after an ``@`` (``page@id=2.html``), the host
folder is ``host`` or ``host+port``, and a page whose name lacks an extension a browser
needs (``/about`` served as HTML) gets one from its content type.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

__all__ = [
    "RESERVED_TOP",
    "TEMPORARY_PREFIX",
    "allocate",
    "file_name",
    "host_folder",
    "natural_path",
    "relative_href",
    "safe_segment",
]

MAX_NAME_BYTES = 255
HASH_CHARS = 10

# Names at the top of the output folder that belong to the export itself.
TEMPORARY_PREFIX = ".export-"
"""Files being written are named so; no exported file or folder name starts with it."""
RESERVED_TOP = frozenset({"index.html", ".archiver-export.json", "export-report.json"})

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SAFE_PUNCT = frozenset("!$&'()+,;=@")
_FORBIDDEN = frozenset('<>:"/\\|?*') | {chr(c) for c in range(32)} | {"\x7f"}
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"{prefix}{n}" for prefix in ("com", "lpt") for n in "0123456789¹²³"]
)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_DEFAULT_PORTS = {"http": 80, "https": 443}

# Extension a browser needs to open a file of this type from disk: the first is written
# when the URL's own extension is not in the list.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "text/html": (".html", ".htm"),
    "application/xhtml+xml": (".xhtml", ".xht"),
    "text/css": (".css",),
    "text/javascript": (".js", ".mjs"),
    "application/javascript": (".js", ".mjs"),
    "application/x-javascript": (".js", ".mjs"),
    "application/ecmascript": (".js", ".mjs"),
    "application/json": (".json",),
    "application/ld+json": (".jsonld", ".json"),
    "application/manifest+json": (".webmanifest", ".json"),
    "application/xml": (".xml",),
    "text/xml": (".xml",),
    "application/rss+xml": (".rss", ".xml"),
    "application/atom+xml": (".atom", ".xml"),
    "text/plain": (".txt", ".text", ".md", ".csv", ".log"),
    "text/csv": (".csv",),
    "text/markdown": (".md", ".markdown"),
    "image/png": (".png",),
    "image/jpeg": (".jpg", ".jpeg", ".jpe", ".jfif"),
    "image/gif": (".gif",),
    "image/webp": (".webp",),
    "image/avif": (".avif",),
    "image/svg+xml": (".svg", ".svgz"),
    "image/x-icon": (".ico",),
    "image/vnd.microsoft.icon": (".ico",),
    "image/bmp": (".bmp",),
    "image/tiff": (".tif", ".tiff"),
    "font/woff2": (".woff2",),
    "font/woff": (".woff",),
    "application/font-woff": (".woff",),
    "application/font-woff2": (".woff2",),
    "font/ttf": (".ttf",),
    "font/otf": (".otf",),
    "application/x-font-ttf": (".ttf",),
    "application/vnd.ms-fontobject": (".eot",),
    "application/pdf": (".pdf",),
    "application/zip": (".zip",),
    "application/gzip": (".gz", ".tgz"),
    "application/wasm": (".wasm",),
    "audio/mpeg": (".mp3",),
    "audio/ogg": (".ogg", ".oga", ".opus"),
    "audio/wav": (".wav",),
    "video/mp4": (".mp4", ".m4v"),
    "video/webm": (".webm",),
    "video/ogg": (".ogv", ".ogg"),
}

MirrorPath = tuple[str, ...]
"""A relative path of the mirror as segments: (host folder, dirs..., file name)."""


def _decode_escapes(raw: str) -> str:
    """Percent-decode `raw` only where the result is harmless; re-escape the rest upper-case."""
    out: list[str] = []
    pending: list[int] = []  # bytes of a run of %XX escapes

    def flush() -> None:
        i = 0
        while i < len(pending):
            byte = pending[i]
            if byte < 0x80:
                char = chr(byte)
                out.append(char if char in _UNRESERVED or char in _SAFE_PUNCT else f"%{byte:02X}")
                i += 1
                continue
            width = (
                2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4 if byte >> 3 == 0b11110 else 0
            )
            chunk = bytes(pending[i : i + width]) if width else b""
            try:
                char = chunk.decode("utf-8") if width and len(chunk) == width else ""
            except UnicodeDecodeError:
                char = ""
            if char and _printable(char):
                out.append(char)
                i += width
            else:
                out.append(f"%{byte:02X}")
                i += 1
        pending.clear()

    position = 0
    while position < len(raw):
        match = _ESCAPE.match(raw, position)
        if match:
            pending.append(int(match.group(1), 16))
            position = match.end()
            continue
        flush()
        char = raw[position]
        if char == "%":
            out.append("%25")
        elif char in _FORBIDDEN or not _printable(char):
            out.extend(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
        else:
            out.append(char)
        position += 1
    flush()
    return "".join(out)


def _printable(char: str) -> bool:
    if char in _FORBIDDEN:
        return False
    category = unicodedata.category(char)
    return not (category.startswith("C") or category in ("Zl", "Zp"))


def _hash(text: str, length: int = HASH_CHARS) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _fit(name: str, ext: str = "") -> str:
    """`name` + `ext`, cut to 255 UTF-8 bytes with a hash of the whole when too long.

    A name that would start like the export's own temporary files has its dot escaped.
    """
    if name.startswith(TEMPORARY_PREFIX):
        name = "%2E" + name[1:]
    whole = name + ext
    if len(whole.encode("utf-8")) <= MAX_NAME_BYTES:
        return whole
    suffix = "~" + _hash(whole) + ext
    budget = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    cut = name.encode("utf-8")[: max(budget, 0)].decode("utf-8", "ignore")
    return cut + suffix


def _portable(name: str) -> str:
    """Escape what Windows mangles: trailing dots/spaces, device names; `.`/`..` too."""
    if name in (".", ".."):
        return "%2E" * len(name)
    if not name:
        return "_"
    tail = ""
    while name and name[-1] in ". ":
        tail = ("%2E" if name[-1] == "." else "%20") + tail
        name = name[:-1]
    name += tail
    stem, dot, rest = name.partition(".")
    if stem.rstrip(" ").casefold() in _WINDOWS_DEVICES:
        name = stem + "_" + dot + rest
    return name


def safe_segment(raw: str) -> str:
    """One URL path segment as a file or folder name that every OS accepts."""
    return _fit(_portable(unicodedata.normalize("NFC", _decode_escapes(raw))))


def host_folder(url: str) -> str:
    """``host`` or ``host+port`` (default ports dropped), lower-case, safe as a folder name."""
    parts = urlsplit(url)
    host = (parts.hostname or "_").lower().rstrip(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    name = host if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()) else f"{host}+{port}"
    name = safe_segment(name.replace(":", "+"))
    if name.casefold() in RESERVED_TOP:
        name += "~host"
    return name


def file_name(last: str, query: str | None, mime: str) -> str:
    """The file name for the last path segment `last` (raw), its query and its content type."""
    accepted = EXTENSIONS.get(mime, ())
    decoded = unicodedata.normalize("NFC", _decode_escapes(last)) if last else ""
    if decoded in (".", ".."):
        decoded = "%2E" * len(decoded)
    stem, ext = decoded, ""
    if not stem:
        stem = "index"
    dot = stem.rfind(".")
    if dot > 0 and stem[dot:].lower() in accepted:
        stem, ext = stem[:dot], stem[dot:]
    elif accepted:
        ext = accepted[0]
    elif query is not None and dot > 0 and 1 < len(stem) - dot <= 6:
        stem, ext = stem[:dot], stem[dot:]  # unknown type: keep its own extension last
    if query is not None:
        stem += "@" + _decode_escapes(query)
    return _fit(_portable(stem), ext)


def natural_path(url: str, mime: str) -> MirrorPath:
    """The path a URL would get with no other URL around: ``(host, *dirs, file)``."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:] if parts.path.startswith("/") else [parts.path]
    if not segments:
        segments = [""]
    dirs = [safe_segment(s) for s in segments[:-1]]
    query = parts.query if ("?" in url.split("#", 1)[0]) else None
    return (host_folder(url), *dirs, file_name(segments[-1], query, mime))


def _key(path: Iterable[str]) -> tuple[str, ...]:
    """Comparison key for case- and normalization-insensitive disks (Windows, macOS)."""
    return tuple(unicodedata.normalize("NFC", segment).casefold() for segment in path)


def _with_hash(name: str, url: str, length: int) -> str:
    dot = name.rfind(".")
    stem, ext = (name[:dot], name[dot:]) if dot > 0 and len(name) - dot <= 10 else (name, "")
    return _fit(stem + "~" + _hash(url, length), ext)


def allocate(entries: Iterable[tuple[str, MirrorPath]]) -> dict[str, MirrorPath]:
    """Give every URL its own file: `entries` are (url, natural path) pairs.

    URLs are taken in sorted order; a URL whose file name is already taken (also when
    only case or Unicode normalization differs), or is needed as a folder by another
    URL (``/a`` when ``/a/b`` exists), keeps its folder and gets ``~HASH`` (of its URL)
    before the extension.  The result depends only on the set of entries.
    """
    ordered = sorted(set(entries))
    folders: set[tuple[str, ...]] = set()
    for _url, path in ordered:
        key = _key(path)
        for end in range(1, len(key)):
            folders.add(key[:end])
    taken: set[tuple[str, ...]] = {(name,) for name in RESERVED_TOP}
    result: dict[str, MirrorPath] = {}
    for url, path in ordered:
        if url in result:
            continue
        candidate = path
        length = 8
        while _key(candidate) in taken or _key(candidate) in folders:
            candidate = (*path[:-1], _with_hash(path[-1], url, length))
            length += 8
            if length > 64:
                raise RuntimeError(f"cannot find a free file name for {url}")
        taken.add(_key(candidate))
        result[url] = candidate
    return result


_HREF_SAFE = "!$&'()*+,;=@~-._"


def relative_href(source: MirrorPath, target: MirrorPath) -> str:
    """The relative URL from the file `source` to the file `target`, percent-encoded ASCII."""
    return _relative(source[:-1], target)


@functools.lru_cache(maxsize=65536)
def _relative(source_dirs: MirrorPath, target: MirrorPath) -> str:
    target_dirs = target[:-1]
    common = 0
    while (
        common < len(source_dirs) and common < len(target_dirs) and source_dirs[common] == target_dirs[common]
    ):
        common += 1
    up = [".."] * (len(source_dirs) - common)
    down = [quote(segment, safe=_HREF_SAFE) for segment in target[common:]]
    href = "/".join(up + down)
    if not up and down and ":" in down[0].split("/", 1)[0]:
        href = "./" + href  # never let a first segment read as a scheme
    return href
