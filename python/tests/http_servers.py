"""HTTP servers for the tests, on 127.0.0.1 only, started and stopped by the tests.

- serve_folder(root): nginx from Debian serving `root` (Range support built in); when nginx is
  not installed, a Python http.server subclass with Range support (the fixture says which).
- FaultProxy(upstream): an HTTP/1.1 proxy in front of a server that injects faults on a fixed
  schedule: 503 SlowDown, 429, a reset mid-body, a truncated body, a wrong Content-Length, a
  stall, or a fixed delay per request. Every loop in it is bounded; stalls wait on an event
  that stop() sets.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, process: subprocess.Popen | None = None) -> None:
    for _ in range(200):  # bounded: 200 x 25 ms
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.025)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _RangeHandler(BaseHTTPRequestHandler):
    """Static files with single byte ranges (bytes=a-b, a-, -n), HEAD and keep-alive."""

    protocol_version = "HTTP/1.1"
    root: Path

    def log_message(self, *args):  # quiet
        pass

    def _file(self) -> Path | None:
        relative = self.path.split("?", 1)[0].lstrip("/")
        path = (self.root / relative).resolve()
        if self.root not in path.parents and path != self.root:
            return None
        return path if path.is_file() else None

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        path = self._file()
        if path is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = path.read_bytes()
        size = len(data)
        status, first, last = 200, 0, size - 1
        match = _RANGE.match(self.headers.get("Range", ""))
        if match:
            a, b = match.groups()
            if a == "" and b:
                first, last = max(0, size - int(b)), size - 1
            elif a:
                first, last = int(a), min(size - 1, int(b)) if b else size - 1
            if first >= size or last < first:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        chunk = data[first : last + 1]
        self.send_response(status)
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(chunk)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if body:
            self.wfile.write(chunk)


class StaticServer:
    """nginx (or the Python fallback) serving `root` on 127.0.0.1:port."""

    def __init__(self, root: str | os.PathLike, prefer_nginx: bool = True, tls: bool = False):
        """tls: HTTPS with a self-signed certificate for 127.0.0.1 (needs nginx and openssl)."""
        self.root = Path(root).resolve()
        self.port = free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.kind = ""
        self._process: subprocess.Popen | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        nginx = shutil.which("nginx") or (
            "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
        )
        if tls and not (nginx and shutil.which("openssl")):
            raise RuntimeError("an HTTPS server needs nginx and openssl (scripts/bootstrap.sh)")
        if (prefer_nginx or tls) and nginx:
            self._start_nginx(nginx)
        else:
            self._start_python()

    def _start_nginx(self, nginx: str) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="chute-nginx-")
        tmp = Path(self._tmp.name)
        conf = tmp / "nginx.conf"
        # Run as root (a container), nginx's workers would switch to nobody, who cannot read
        # pytest's private tmp folders: keep them as the current user.
        user = "user root;" if os.geteuid() == 0 else ""
        listen = f"127.0.0.1:{self.port}"
        if self.tls:
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
            self.certificate = tmp / "cert.pem"
            listen += f" ssl; ssl_certificate {tmp}/cert.pem; ssl_certificate_key {tmp}/key.pem"
        conf.write_text(f"""
{user}
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  keepalive_requests 100000;
  sendfile on;
  default_type application/octet-stream;
  server {{
    listen {listen};
    root {self.root};
  }}
}}
""")
        self._process = subprocess.Popen(
            [nginx, "-c", str(conf), "-p", str(tmp)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _wait_listening(self.port, self._process)
        self.kind = "nginx"

    def _start_python(self) -> None:
        handler = type("Handler", (_RangeHandler,), {"root": self.root})
        self._server = _Server(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        _wait_listening(self.port)
        self.kind = "python http.server (nginx not installed)"

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
            self._process = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


FAULTS = ("ok", "503", "429", "500", "reset", "truncate", "short_length", "long_length", "stall")


class _Server(ThreadingHTTPServer):
    """A listen backlog for a client with many connections at once: socketserver's default of 5
    drops the SYNs beyond it, and each dropped one waits a second to be sent again."""

    request_queue_size = 128


class FaultProxy:
    """Forwards to `upstream` (http://127.0.0.1:port); request n gets schedule[n] (then "ok"),
    or `always` for every request when set. delay_s delays every response."""

    def __init__(self, upstream: str, schedule=(), always: str | None = None, delay_s: float = 0.0,
                 stall_s: float = 30.0):  # fmt: skip
        self.upstream = upstream.split("://", 1)[1]
        self.schedule = list(schedule)
        self.always = always
        self.delay_s = delay_s
        self.stall_s = stall_s
        self.requests = 0
        self.active = 0  # requests being handled now ...
        self.most_active = 0  # ... and the most at once
        self.log: list[tuple[str, str]] = []  # (path, fault) per request
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy._handle(self, "GET")

            def do_HEAD(self):
                proxy._handle(self, "HEAD")

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _next_fault(self, path: str) -> str:
        with self._lock:
            n = self.requests
            self.requests += 1
            fault = self.always or (self.schedule[n] if n < len(self.schedule) else "ok")
            self.log.append((path, fault))
            return fault

    def _upstream(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.upstream, timeout=30)
            self._local.conn = conn
        return conn

    def _fetch(self, method: str, path: str, headers: dict) -> tuple[int, list, bytes]:
        for attempt in range(2):  # one reconnect when the kept-alive connection was closed
            conn = self._upstream()
            try:
                conn.request(method, path, headers=headers)
                response = conn.getresponse()
                return response.status, response.getheaders(), response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            self._handle_counted(h, method)
        finally:
            with self._lock:
                self.active -= 1

    def _handle_counted(self, h: BaseHTTPRequestHandler, method: str) -> None:
        fault = self._next_fault(h.path)
        if self.delay_s:
            self._stop.wait(self.delay_s)
        if fault in ("503", "429", "500"):
            body = b"<Error><Code>SlowDown</Code></Error>" if fault == "503" else b"busy"
            h.send_response(int(fault))
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if method == "GET":
                h.wfile.write(body)
            return
        forward = {k: v for k, v in h.headers.items() if k.lower() in ("range",)}
        status, headers, body = self._fetch(method, h.path, forward)
        passed = [(k, v) for k, v in headers if k.lower() not in ("connection", "keep-alive",
                                                                   "content-length", "transfer-encoding")]  # fmt: skip
        length = len(body) if method == "GET" else int(dict(headers).get("Content-Length", 0))
        if fault == "short_length" and method == "GET" and len(body) > 1:
            length = len(body) - 1  # says fewer bytes than the range holds
        elif fault == "long_length" and method == "GET":
            length = len(body) + 7  # promises more, then closes
        h.send_response(status)
        for k, v in passed:
            h.send_header(k, v)
        h.send_header("Content-Length", str(length))
        h.end_headers()
        if method != "GET":
            return
        if fault == "reset" and len(body) > 1:
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()  # RST
            h.close_connection = True
            return
        if fault == "truncate" and len(body) > 1:
            h.wfile.write(body[: len(body) // 2])
            h.close_connection = True
            return
        if fault == "stall":
            h.wfile.write(body[:1])
            h.wfile.flush()
            self._stop.wait(self.stall_s)
            h.close_connection = True
            return
        if fault == "short_length":
            h.wfile.write(body[:length])
            h.close_connection = True  # the extra byte would poison the connection
            return
        h.wfile.write(body[: min(len(body), length)])
        if fault == "long_length":
            h.close_connection = True

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
