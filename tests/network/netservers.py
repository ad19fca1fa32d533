"""Loopback servers for the real-network tests: a server whose every reply a function of the
request decides (plain or TLS), a small HTTP proxy (absolute-form requests and CONNECT
tunnels), and a self-signed certificate for a made-up host name.

The proxy sends every request to 127.0.0.1, whatever host it names: a test can use a host
name that is not loopback (so the client does use the proxy) without any name resolving.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

HOST = "memgauge-test.invalid"  # never resolved: only the proxy sees it


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


Reply = tuple[int, dict[str, str], bytes]


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(obj).encode()


def completion(text: str = "red") -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}


class RouteServer:
    """Answers each request with ``handle(seen) -> (status, headers, body)``; keeps every
    request (``seen``) and counts connections. ``tls`` (an SSLContext) serves https."""

    def __init__(self, handle: Callable[[Seen], Reply] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.handle = handle or (lambda seen: json_reply(200, completion()))
        self.seen: list[Seen] = []
        self.connections = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                server.connections += 1
                super().setup()

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path,
                            {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(n))
                server.seen.append(seen)
                status, headers, body = server.handle(seen)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            do_GET = do_POST = _any

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@dataclass
class ProxyLog:
    request_lines: list[str] = field(default_factory=list)
    proxy_auth: list[str | None] = field(default_factory=list)
    forwarded_headers: list[dict[str, str]] = field(default_factory=list)

    def to_test_host(self) -> list[str]:
        """The request lines that name the test host: while a test sets HTTPS_PROXY, a
        third-party thread in the same process (telemetry that honours it) can open its
        own tunnel through the proxy; a fresh-clone run once saw one to a telemetry host."""
        return [line for line in self.request_lines if HOST in line]


class LoopbackProxy:
    """An HTTP proxy on 127.0.0.1 that connects every request to 127.0.0.1 at the port it
    names: absolute-form requests are forwarded (one per connection), CONNECT is tunnelled.
    ``refuse_connect`` answers every CONNECT with that status instead."""

    def __init__(self, refuse_connect: int | None = None) -> None:
        self.log = ProxyLog()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                head = _read_head(sock)
                if head is None:
                    return
                line, headers, rest = head
                proxy.log.request_lines.append(line)
                proxy.log.proxy_auth.append(headers.get("proxy-authorization"))
                method, target, _ = line.split(" ", 2)
                if method == "CONNECT":
                    if refuse_connect:
                        sock.sendall(f"HTTP/1.1 {refuse_connect} Refused\r\n"
                                     "Content-Length: 0\r\n\r\n".encode())
                        return
                    port = int(target.rsplit(":", 1)[1])
                    upstream = socket.create_connection(("127.0.0.1", port))
                    sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pipe(sock, upstream, rest)
                    return
                url = urlsplit(target)
                body = rest
                need = int(headers.get("content-length") or 0)
                while len(body) < need:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    body += chunk
                kept = {k: v for k, v in headers.items() if k != "proxy-authorization"}
                proxy.log.forwarded_headers.append(kept)
                kept["connection"] = "close"
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                out = f"{method} {path} HTTP/1.1\r\n" + "".join(
                    f"{k}: {v}\r\n" for k, v in kept.items()) + "\r\n"
                with socket.create_connection(("127.0.0.1", url.port or 80)) as upstream:
                    upstream.sendall(out.encode("latin-1") + body)
                    reply = b""
                    while chunk := upstream.recv(65536):
                        reply += chunk
                sock.sendall(reply)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _read_head(sock: socket.socket) -> tuple[str, dict[str, str], bytes] | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for h in lines:
        name, _, value = h.partition(":")
        headers[name.strip().lower()] = value.strip()
    return line, headers, rest


def _pipe(a: socket.socket, b: socket.socket, first: bytes) -> None:
    if first:
        b.sendall(first)

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=one_way, args=(b, a), daemon=True)
    t.start()
    one_way(a, b)
    t.join(10)
    b.close()


def self_signed(tmp: Path, name: str = HOST) -> tuple[ssl.SSLContext, Path]:
    """A server TLS context for ``name`` (and 127.0.0.1) and the certificate's path (for a
    client that is to trust it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_path, key_path)
    return ctx, cert_path
