"""An HTTPS site and a CONNECT proxy on loopback, in threads of the test process.

Threads, not the test's event loop: a command run on a pseudo-terminal blocks the test while
the site must keep answering.  Certificates are made by `trustme` in the test, so every
kind of refusal (expired, another host's, self-signed, unknown authority) is a real one.
"""

from __future__ import annotations

import datetime
import http.server
import select
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trustme

PAGES = {
    "/": b'<html><head><title>Home</title></head><body><a href="/a">a</a></body></html>',
    "/a": b"<html><head><title>A</title></head><body>page a</body></html>",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    server: TlsSite

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        body = PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class TlsSite(http.server.ThreadingHTTPServer):
    """The two pages of PAGES over TLS; counts the connections it accepted and the paths asked."""

    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.paths: list[str] = []
        self.connections = 0

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        self.connections += 1
        sock.settimeout(5)
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.do_handshake()
        except (OSError, ssl.SSLError):
            return  # the client refused the certificate
        super().finish_request(request, client_address)


class Certificates:
    """An authority (its PEM file is what --ca-certificate takes) and the servers' certificates."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ca = trustme.CA()
        self.ca_file = folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))

    def context(self, kind: str) -> ssl.SSLContext:
        """A server context whose certificate is `kind`: good, expired, other-host, self-signed,
        unknown-authority."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        now = datetime.datetime.now(datetime.UTC)
        if kind == "good":
            self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        elif kind == "expired":
            cert = self.ca.issue_cert(
                "127.0.0.1",
                not_before=now - datetime.timedelta(days=30),
                not_after=now - datetime.timedelta(days=1),
            )
            cert.configure_cert(context)
        elif kind == "other-host":
            self.ca.issue_cert("elsewhere.example").configure_cert(context)
        elif kind == "self-signed":
            own = trustme.CA()
            chain = self.folder / "self-signed.pem"
            key = self.folder / "self-signed.key"
            own.cert_pem.write_to_path(str(chain))
            own.private_key_pem.write_to_path(str(key))
            context.load_cert_chain(str(chain), str(key))
        elif kind == "unknown-authority":
            trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
        else:
            raise ValueError(kind)
        return context


@contextmanager
def tls_site(context: ssl.SSLContext) -> Iterator[TlsSite]:
    site = TlsSite(context)
    thread = threading.Thread(target=site.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()
        thread.join(5)


class _Tunnel(socketserver.BaseRequestHandler):
    server: ConnectProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(10)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        self.server.requests.append(f"{method} {target}")
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            ends = [client, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 10)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is client else client).sendall(data)


class ConnectProxy(socketserver.ThreadingTCPServer):
    """A forward proxy that only tunnels (CONNECT), as proxies do for https:// sites; it
    remembers every request line it got."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.requests: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def connect_proxy() -> Iterator[ConnectProxy]:
    proxy = ConnectProxy()
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Refusal(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(10)
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")


@contextmanager
def refusing_proxy() -> Iterator[str]:
    """A proxy that answers every request 407 (its credentials wrong); yields its URL."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Refusal)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
