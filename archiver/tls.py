"""How the crawl checks the TLS certificates of the sites it reaches, and how a refusal reads.

Certificates are checked against the system's authorities, plus those of
`--ca-certificate FILE` (an intranet's own authority, as wget's option of that name adds
them); `--no-check-certificate` accepts any certificate, warned at the start and recorded in
the WARC's warcinfo, since such an archive may hold what an impostor served.  A refused
certificate is no network fault: asking again gets the same certificate, so it is not retried.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from .config import Config
from .errors import ConfigError

_EXPIRED = (9, 10)
"""X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED."""
_SELF_SIGNED = (18, 19)
"""X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN."""
_UNKNOWN_AUTHORITY = (2, 20, 21)
"""X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT(_LOCALLY), X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE."""
_OTHER_HOST = (62, 64)
"""X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH."""

_TRUST_HINT = "--ca-certificate FILE trusts its authority, --no-check-certificate accepts it"


def client_context(config: Config) -> ssl.SSLContext | bool:
    """What aiohttp's connector takes as `ssl`: True for aiohttp's own checking context (the
    system's authorities), a context that also trusts `ca_certificate`, or False for no check.

    Raises ConfigError for a `ca_certificate` that cannot be read as PEM certificates.
    """
    if not config.check_certificate:
        return False
    if not config.ca_certificate:
        return True
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])  # as aiohttp's own context: the crawl speaks HTTP/1.1
    load_authorities(context, Path(config.ca_certificate))
    return context


def load_authorities(context: ssl.SSLContext, path: Path) -> None:
    """Add the certificates of the PEM file `path` to those `context` trusts."""
    try:
        context.load_verify_locations(cafile=str(path))
    except FileNotFoundError:
        raise ConfigError(f"ca_certificate: {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"ca_certificate: {path} is a folder, not a PEM file") from None
    except ssl.SSLError:
        raise ConfigError(f"ca_certificate: {path} holds no PEM certificate") from None
    except OSError as exc:
        raise ConfigError(f"ca_certificate: cannot read {path}: {exc.strerror or exc}") from None


def certificate_problem(error: ssl.SSLCertVerificationError, host: str) -> str:
    """One line saying why the certificate of `host` was refused, and what would accept it."""
    code = error.verify_code
    if code in _EXPIRED:
        what = "has expired" if code == 10 else "is not valid yet"
        return f"TLS certificate of {host} {what} (--no-check-certificate accepts it)"
    if code in _OTHER_HOST:
        return (
            f"TLS certificate is not for {host}: the server showed another site's"
            " (--no-check-certificate accepts it)"
        )
    if code in _SELF_SIGNED:
        return f"TLS certificate of {host} is self-signed ({_TRUST_HINT})"
    if code in _UNKNOWN_AUTHORITY:
        return f"TLS certificate of {host} is signed by an unknown authority ({_TRUST_HINT})"
    reason = error.verify_message or error.reason or str(error)
    return f"TLS certificate of {host} refused: {reason} (--no-check-certificate accepts it)"


UNCHECKED_WARNING = (
    "TLS certificates are not checked (--no-check-certificate): anyone between here and the sites"
    " can answer in their name, and the WARC files say the check was off"
)
