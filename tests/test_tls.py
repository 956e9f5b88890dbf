"""HTTPS sites: certificates checked, the options that widen the check, refusals said in one
line and never retried, HTTPS through a proxy, and an unreachable proxy said at once.

Every site is a real TLS server on loopback whose certificate the test makes (`tls_site`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminal import run_on_terminal, screen_lines
from tls_site import Certificates, closed_port, connect_proxy, refusing_proxy, tls_site
from warcio.archiveiterator import ArchiveIterator

pytestmark = pytest.mark.timeout(60)

ENV = {**os.environ, "ARCHIVER_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["--plugin", "archiver_plugins.links", "--plugin", "archiver_plugins.warc"]


def crawl(url: str, archive: Path, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", "crawl", url, "-o", str(archive), "--delay", "0", *PLUGINS, *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=50,
    )
    return proc.returncode, proc.stdout, proc.stderr


def warc_records(archive: Path) -> list[tuple[str, dict[str, str], bytes]]:
    """(type, WARC headers, block) of every record of the archive's WARC files."""
    found = []
    for path in sorted((archive / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                headers = dict(record.rec_headers.headers)
                found.append((record.rec_type, headers, record.content_stream().read()))
    return found


def responses(archive: Path) -> set[str]:
    return {h["WARC-Target-URI"] for kind, h, _ in warc_records(archive) if kind == "response"}


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    return Certificates(tmp_path)


def test_a_site_of_an_authority_given_with_ca_certificate_is_archived(
    certificates: Certificates, tmp_path: Path
) -> None:
    with tls_site(certificates.context("good")) as site:
        code, _, err = crawl(site.url(), tmp_path / "refused", "-q")
        assert code == 1, err  # the authority is not the system's
        assert "signed by an unknown authority" in err
        code, _, err = crawl(site.url(), tmp_path / "a", "-q", "--ca-certificate", str(certificates.ca_file))
        assert code == 0, err
    assert responses(tmp_path / "a") == {site.url("/robots.txt"), site.url("/"), site.url("/a")}
    info = [block for kind, _, block in warc_records(tmp_path / "a") if kind == "warcinfo"]
    assert b"session.check_certificate: True" in info[0]
    assert f"session.ca_certificate: {certificates.ca_file}".encode() in info[0]


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("expired", "TLS certificate of 127.0.0.1 has expired (--no-check-certificate accepts it)"),
        ("other-host", "TLS certificate is not for 127.0.0.1: the server showed another site's"),
        ("self-signed", "TLS certificate of 127.0.0.1 is self-signed (--ca-certificate FILE trusts"),
        ("unknown-authority", "TLS certificate of 127.0.0.1 is signed by an unknown authority"),
    ],
)
def test_a_refused_certificate_is_one_line_and_asked_once(
    certificates: Certificates, tmp_path: Path, kind: str, said: str
) -> None:
    with tls_site(certificates.context(kind)) as site:
        code, _, err = crawl(
            site.url(),
            tmp_path / "a",
            "-q",
            "--max-tries",
            "4",
            "--ca-certificate",
            str(certificates.ca_file),
        )
    assert code == 1, err
    assert err.count("\n") == 1 and err.startswith("archiver: error: no root URL could be fetched"), err
    assert said in err
    assert "tries" not in err
    assert site.connections == 1  # not asked again: the same certificate would come back
    assert site.paths == []


def test_a_refused_certificate_reads_as_one_line_on_a_terminal(
    certificates: Certificates, tmp_path: Path
) -> None:
    with tls_site(certificates.context("self-signed")) as site:
        args = ["crawl", site.url(), "-o", str(tmp_path / "a"), *PLUGINS, "--delay", "0"]
        code, output = run_on_terminal(args, tmp_path, timeout=40)
    assert code == 1, output
    errors = [line for line in screen_lines(output) if "error" in line]
    assert len(errors) == 1, output
    assert errors[0].startswith("archiver: error: no root URL could be fetched"), output
    assert "Traceback" not in output and "SSLCertVerificationError" not in output


def test_no_check_certificate_is_warned_and_said_in_the_warcinfo(
    certificates: Certificates, tmp_path: Path
) -> None:
    with tls_site(certificates.context("self-signed")) as site:
        code, _, err = crawl(site.url(), tmp_path / "a", "--no-check-certificate")
        assert code == 0, err
    assert "TLS certificates are not checked (--no-check-certificate)" in err
    assert responses(tmp_path / "a") == {site.url("/robots.txt"), site.url("/"), site.url("/a")}
    info = [block for kind, _, block in warc_records(tmp_path / "a") if kind == "warcinfo"]
    assert info and all(b"session.check_certificate: False" in block for block in info)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "ca_certificate: {path}: no such file"),
        ("not a certificate\n", "ca_certificate: {path} holds no PEM certificate"),
    ],
)
def test_an_unreadable_ca_certificate_is_a_one_line_error(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_text(content)
    code, _, err = crawl("https://127.0.0.1:9/", tmp_path / "a", "--ca-certificate", str(path))
    assert code == 2, err
    assert err == f"archiver: error: {problem.format(path=path)}\n"
    assert not (tmp_path / "a").exists()


def test_https_goes_through_a_proxy_by_connect(certificates: Certificates, tmp_path: Path) -> None:
    with tls_site(certificates.context("good")) as site, connect_proxy() as proxy:
        args = ["-q", "--proxy", proxy.url, "--ca-certificate", str(certificates.ca_file)]
        code, _, err = crawl(site.url(), tmp_path / "a", *args)
        assert code == 0, err
    assert set(proxy.requests) == {f"CONNECT 127.0.0.1:{site.port}"}
    assert sorted(site.paths) == ["/", "/a", "/robots.txt"]
    assert responses(tmp_path / "a") == {site.url("/robots.txt"), site.url("/"), site.url("/a")}
    for kind, headers, _ in warc_records(tmp_path / "a"):
        if kind == "response":
            assert "WARC-IP-Address" not in headers  # the proxy's address is not the site's


def test_an_unreachable_proxy_is_said_at_once_without_its_credentials(tmp_path: Path) -> None:
    port = closed_port()
    proxy = f"http://agent:hunter2@127.0.0.1:{port}"
    code, _, err = crawl("http://127.0.0.1:9/", tmp_path / "a", "-q", "--max-tries", "4", "--proxy", proxy)
    assert code == 1, err
    assert err == (
        f"archiver: error: cannot reach the proxy http://127.0.0.1:{port}: connection refused:"
        f" the crawl stopped; run `archiver crawl --resume {tmp_path / 'a'}` once it answers\n"
    )


def test_an_unreachable_proxy_reads_as_one_line_on_a_terminal(tmp_path: Path) -> None:
    port = closed_port()
    args = ["crawl", "http://127.0.0.1:9/", "-o", "a", *PLUGINS, "--proxy", f"http://127.0.0.1:{port}"]
    code, output = run_on_terminal(args, tmp_path, timeout=40)
    assert code == 1, output
    lines = screen_lines(output)
    assert f"archiver: error: cannot reach the proxy http://127.0.0.1:{port}: connection refused" in lines[-1]
    assert "unreachable" not in output and "tries" not in output


def test_a_proxy_refusing_its_login_stops_the_crawl_without_showing_the_password(tmp_path: Path) -> None:
    with refusing_proxy() as url:
        proxy = url.replace("http://", "http://agent:hunter2@")
        code, _, err = crawl("https://127.0.0.1:9/", tmp_path / "a", "-q", "--proxy", proxy)
    assert code == 1, err
    assert err == (
        f"archiver: error: the proxy {url} refused the tunnel (CONNECT): HTTP 407 Proxy Authentication"
        f" Required: the crawl stopped; run `archiver crawl --resume {tmp_path / 'a'}` with the proxy's"
        " login right (--proxy http://USER:PASSWORD@HOST:PORT)\n"
    )
    logged = (tmp_path / "a" / "crawl-log.jsonl").read_text() if (tmp_path / "a").exists() else ""
    assert "hunter2" not in err + logged
