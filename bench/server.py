"""Serve a generated site with nginx on 127.0.0.1, optionally 50 ms per response.

nginx is Debian's (installed with apt-get when absent), run as a child in the foreground
(`daemon off`) with a configuration generated in a temporary folder: an ephemeral port on
127.0.0.1, access log off, keep-alive on, the site's 301s from `nginx-redirects.conf` in a
`map $uri` block.

Slow mode: nginx has no sleep of its own, and `tc qdisc ... netem` is not available in this
kernel (no sch_netem), so the delay comes from the echo module Debian packages
(`libnginx-mod-http-echo`): `echo_sleep` arms an nginx timer (no thread, no busy wait), then
`echo_exec` hands the request to the static handler. Every response is delayed, 301 and 404
included, and the clients need no change (same address, same namespace). Its own CPU cost is
measured by `python -m bench.server --measure` and reported by `bench.run` from nginx's /proc
counters.

    with start(site_dir, slow=True) as server:
        print(server.url)        # http://127.0.0.1:PORT/

Command line: `python -m bench.server SITE_DIR [--slow]` serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")
MIME_TYPES = Path("/etc/nginx/mime.types")
DEFAULT_DELAY = 0.05


class ServerError(RuntimeError):
    """nginx could not be installed or started."""


def ensure_packages(*commands: str, packages: tuple[str, ...]) -> None:
    """Install Debian packages when a command is missing: the benchmark sets itself up."""
    if all(shutil.which(c) or Path(c).exists() for c in commands):
        return
    if os.geteuid() != 0:
        raise ServerError(f"{' '.join(commands)} missing; run: apt-get install -y {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"installing {' '.join(packages)} with apt-get", file=sys.stderr)
    update = subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, text=True)
    install = subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages], env=env, capture_output=True, text=True
    )
    if install.returncode != 0:
        raise ServerError(
            f"apt-get install {' '.join(packages)} failed: {install.stderr[-500:]}{update.stderr[-200:]}"
        )


def ensure_nginx(slow: bool = False) -> str:
    """Path of the nginx binary, installing nginx (and the echo module for slow mode) if needed."""
    needed = ["nginx", str(ECHO_MODULE)] if slow else ["nginx"]
    ensure_packages(*needed, packages=("nginx", "libnginx-mod-http-echo") if slow else ("nginx",))
    path = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(path).exists():
        raise ServerError("nginx not found after installing it")
    return path


OPEN_FILE_CACHE = 20_000
"""Files nginx keeps open at most, when its descriptor limit leaves room for them."""
WORKER_CONNECTIONS = 4096
_DESCRIPTORS_CAP = 65_536


@dataclass(frozen=True)
class Descriptors:
    """How nginx shares its descriptors: every cached file and every connection holds one.

    `open_file_cache` must stay below what the worker may open: past the limit `open()` fails
    with EMFILE, `try_files` answers 404 for files that exist, and a crawler looks as if it
    had missed every URL only those pages link to (a 100,000-page site read at 400 pages/s
    touches more than 20,000 files within the cache's 60 s).
    """

    limit: int
    connections: int
    cache: int


def descriptor_budget(limit: int | None = None) -> Descriptors:
    """Sizes for nginx under `limit` descriptors (default: this process's hard limit).

    nginx raises its workers to the limit (`worker_rlimit_nofile`), which needs no privilege
    up to the hard limit; connections take a quarter at most, each may hold one more file
    while it is sent, and the cache gets what is left.
    """
    if limit is None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        limit = _DESCRIPTORS_CAP if hard == resource.RLIM_INFINITY else min(hard, _DESCRIPTORS_CAP)
    connections = max(16, min(WORKER_CONNECTIONS, limit // 4))
    cache = min(OPEN_FILE_CACHE, limit - 2 * connections - 64)
    return Descriptors(limit, connections, max(cache, 0))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _config(
    *,
    docroot: Path,
    workdir: Path,
    port: int,
    redirects: Path | None,
    slow: bool,
    delay: float,
    workers: int,
) -> str:
    user = "user root root;" if os.geteuid() == 0 else ""
    budget = descriptor_budget()
    cache = (
        f"open_file_cache max={budget.cache} inactive=60s;" if budget.cache >= 64 else "open_file_cache off;"
    )
    module = f"load_module {ECHO_MODULE};" if slow else ""
    redirect_map = (
        f'map $uri $redirect_to {{ default ""; include {redirects}; }}'
        if redirects
        else 'map $uri $redirect_to { default ""; }'
    )
    serve = """
        if ($redirect_to) { return 301 $redirect_to; }
        try_files $uri $uri/index.html =404;
    """
    if slow:
        locations = f"""
    location / {{ echo_sleep {delay}; echo_exec @site; }}
    location @site {{ {serve} }}"""
    else:
        locations = f"""
    location / {{ {serve} }}"""
    return f"""
{module}
{user}
worker_processes {workers};
worker_rlimit_nofile {budget.limit};
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{ worker_connections {budget.connections}; }}
http {{
  include {MIME_TYPES};
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 75s;
  keepalive_requests 1000000;
  absolute_redirect off;
  server_tokens off;
  {cache}
  client_body_temp_path {workdir}/body;
  proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fastcgi;
  uwsgi_temp_path {workdir}/uwsgi;
  scgi_temp_path {workdir}/scgi;
  {redirect_map}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    server_name _;
    root {docroot};
    {locations}
  }}
}}
"""


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"nginx exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise ServerError(f"nginx did not listen on port {port} within {timeout:.0f} s")


def _tree_cpu_seconds(pid: int) -> float:
    """User+system CPU of a process and its live children, read from /proc (clock ticks)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
            pids += [int(c) for c in children]
    for p in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / ticks


@dataclass
class Server:
    """A running nginx; stop() (or leaving the `with` block) ends it and removes its folder."""

    url: str
    port: int
    docroot: Path
    slow: bool
    delay: float
    process: subprocess.Popen[bytes]
    workdir: Path
    _stopped: bool = field(default=False, repr=False)

    def cpu_seconds(self) -> float:
        """CPU nginx (master and workers) has used so far."""
        return _tree_cpu_seconds(self.process.pid)

    def error_log(self) -> str:
        path = self.workdir / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start(
    site_dir: str | Path,
    *,
    slow: bool = False,
    delay: float = DEFAULT_DELAY,
    workers: int = 1,
    port: int = 0,
) -> Server:
    """Start nginx serving `site_dir` (a sitegen output folder, or any document root).

    `workers` is nginx's worker_processes: one by default, so the server leaves the other core
    to the crawler it is measured against.
    """
    nginx = ensure_nginx(slow)
    site = Path(site_dir).resolve()
    docroot = site / "site" if (site / "site").is_dir() else site
    redirects = site / "nginx-redirects.conf"
    last_error = ""
    for _ in range(5):
        chosen = port or free_port()
        workdir = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
        conf = workdir / "nginx.conf"
        conf.write_text(
            _config(
                docroot=docroot,
                workdir=workdir,
                port=chosen,
                redirects=redirects if redirects.exists() else None,
                slow=slow,
                delay=delay,
                workers=workers,
            )
        )
        process = subprocess.Popen(
            [nginx, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = Server(
            url=f"http://127.0.0.1:{chosen}/",
            port=chosen,
            docroot=docroot,
            slow=slow,
            delay=delay,
            process=process,
            workdir=workdir,
        )
        try:
            _wait_listening(chosen, process)
            return server
        except ServerError as exc:
            last_error = f"{exc}: {server.error_log().strip()[-400:]}"
            server.stop()
            if port:
                break
    raise ServerError(last_error)


@contextlib.contextmanager
def serving(site_dir: str | Path, **options: object) -> Iterator[Server]:
    server = start(site_dir, **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path, help="a sitegen output folder or a document root")
    parser.add_argument("--slow", action="store_true", help="delay every response")
    parser.add_argument("--delay", type=float, default=DEFAULT_DELAY, help="seconds (default 0.05)")
    parser.add_argument("--workers", type=int, default=1, help="nginx worker processes")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    with start(args.site, slow=args.slow, delay=args.delay, workers=args.workers, port=args.port) as server:
        print(server.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
