"""SURT keys: the sort key web-archive indexes (CDXJ, pywb) use to find a URL.

A SURT key is a canonical form of a URL with the host reversed, so that all of a
site's URLs sort together: ``http://www.Example.com/A?b=2&a=1`` becomes
``com,example)/a?a=1&b=2``.  Written here from the published canonicalization
rules (scheme, user info, default port, ``www`` prefix and fragment dropped;
percent-escapes normalized; dot segments resolved; path and query lower-cased;
query arguments sorted; common session ids removed), so that our CDXJ files
sort and look up the same way pywb's do without depending on AGPL code.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
from urllib.parse import unquote_to_bytes, urlsplit

_DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21"}
_WWW = re.compile(r"^www\d*\.")
_SESSION_QUERY = re.compile(
    r"^(?:jsessionid=[0-9a-z]{32}|phpsessid=[0-9a-z]{32}|sid=[0-9a-z]{32}"
    r"|aspsessionid[a-z]{8}=[a-z]{24}|cfid=[^&]+|cftoken=[^&]+)$"
)


def surt(url: str) -> str:
    """The SURT key of `url`; a URL that cannot be parsed is returned as it is."""
    if not url or url.startswith(("filedesc", "dns:", "urn:", "warcinfo:")):
        return url or "-"
    try:
        return _surt(url)
    except ValueError:
        return url


def _surt(url: str) -> str:
    url = url.strip().replace("\t", "").replace("\r", "").replace("\n", "")
    if "://" not in url.split("?", 1)[0]:
        url = "http://" + url
    parts = urlsplit(url)
    host = _canonical_host(parts.hostname or "")
    port = parts.port
    scheme = parts.scheme.lower()
    port_text = "" if port is None or _DEFAULT_PORTS.get(scheme) == str(port) else f":{port}"
    path = _canonical_path(parts.path)
    query = _canonical_query(parts.query)
    key = _reverse_host(host) + port_text + ")" + path
    if query:
        key += "?" + query
    return key


@functools.lru_cache(maxsize=1024)
def _canonical_host(host: str) -> str:
    host = _unescape(host).decode("utf-8", "replace").lower().strip(".")
    host = re.sub(r"\.{2,}", ".", host)
    if host.isdigit():
        value = int(host)
        if value < 2**32:
            return str(ipaddress.IPv4Address(value))
    with contextlib.suppress(UnicodeError):
        host = host.encode("idna").decode("ascii")
    return _WWW.sub("", host)


def _reverse_host(host: str) -> str:
    if ":" in host:  # IPv6 literal: kept as written, without brackets
        return host
    return ",".join(reversed(host.split(".")))


def _unescape(text: str) -> bytes:
    """Percent-decode until nothing changes, as the canonicalization rules ask."""
    data = text.encode("utf-8", "surrogateescape")
    while True:
        decoded = unquote_to_bytes(data)
        if decoded == data:
            return data
        data = decoded


_UNSAFE = re.compile(rb"[\x00-\x20\x7f-\xff#%]")


def _escape(data: bytes) -> str:
    """Escape only what cannot stand in a URL: controls, space, '#', '%' and non-ASCII."""
    if _UNSAFE.search(data) is None:
        return data.decode("ascii")  # the usual path: a byte-by-byte loop cost ~10 us a URL
    out = []
    for byte in data:
        if byte <= 0x20 or byte >= 0x7F or byte in (0x23, 0x25):
            out.append(f"%{byte:02X}")
        else:
            out.append(chr(byte))
    return "".join(out)


def _canonical_path(path: str) -> str:
    path = _escape(_unescape(path or "/"))
    segments: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    return ("/" + "/".join(segments)).lower()


def _canonical_query(query: str) -> str:
    if not query:
        return ""
    query = _escape(_unescape(query)).lower()
    kept = [arg for arg in query.split("&") if not _SESSION_QUERY.match(arg)]
    return "&".join(sorted(kept))
