"""HTTP/1.1 requests on kept-alive connections, one per thread: the transport of small PUTs (small_put.py).

Of the CPU a 64 KiB PUT to SeaweedFS costs, botocore's HTTP session took 0.30 ms, http.client
alone 0.16 ms (most of it parsing the answer's header fields with the email package) and a
socket written and read directly 0.08 ms (docs/performance.md). With thousands of small files
on one interpreter that difference is the upload's pace, so small PUTs go over this.

It reads only what a PUT's answer needs (RFC 9112): the status line, the header fields, a body
of Content-Length bytes or, without one, up to the end of the connection; interim 1xx answers
are skipped. Anything else (a chunked or malformed answer, a reset, a timeout, a connection the
server closed) raises WireError and drops the connection; the caller sends the request again
through botocore. TLS verifies the server's certificate and host name against the CA bundle
botocore would use; endpoints behind a proxy never come here (small_put.py).
"""

from __future__ import annotations

import re
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from inference_platform.weights.s3.client import DEFAULT_PORTS, endpoint_server

MAX_HEAD_BYTES = 64 * 1024
# An answer's body is read (so the connection can carry the next request) only up to this size.
MAX_BODY_BYTES = 1024 * 1024
STATUS_LINE = re.compile(rb"HTTP/1\.([01]) (\d{3})(?: [^\r\n]*)?")
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class WireError(Exception):
    """The exchange failed or its answer is not one this module reads; the connection is dropped."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names in lower case


def host_header(endpoint: str) -> str:
    """The Host of requests to `endpoint`: the server `endpoint_server` names, IPv6 in brackets."""
    host, port = endpoint_server(endpoint)
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"


class _Connection:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = bytearray()

    def fill(self) -> None:
        data = self.sock.recv(256 * 1024)
        if not data:
            raise WireError("the server closed the connection")
        self.buffer += data

    def take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self.fill()
        taken = bytes(self.buffer[:n])
        del self.buffer[:n]
        return taken

    def head(self) -> bytes:
        """Bytes up to the blank line that ends an answer's header section."""
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise WireError("an answer's header section is too large")
            self.fill()
        return self.take(end + 4)[:-4]

    def rest(self) -> None:
        """Read to the end of the connection (an answer without a length)."""
        while len(self.buffer) <= MAX_BODY_BYTES:
            data = self.sock.recv(256 * 1024)
            if not data:
                return
            self.buffer += data
        raise WireError("an answer's body is too large")

    def dropped(self) -> bool:
        """The server closed an idle connection (or sent something unasked), as urllib3 checks before reuse."""
        if self.sock.fileno() < 0 or self.buffer:
            return True
        readable = select.poll()  # not select(): it refuses descriptors above FD_SETSIZE
        readable.register(self.sock, select.POLLIN)
        return bool(readable.poll(0))


def _fields(lines: list[bytes]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not TOKEN.fullmatch(name):
            raise WireError(f"a malformed header field in the answer: {line[:80]!r}")
        key, text = name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")
        if key in fields:
            if key == "content-length":
                if fields[key] != text:
                    raise WireError("an answer with two different Content-Length fields")
                continue
            text = f"{fields[key]}, {text}"  # repeated fields are one list (RFC 9110 5.3)
        fields[key] = text
    return fields


def _tokens(value: str) -> set[str]:
    return {token.strip().lower() for token in value.split(",")}


class Connections:
    """Connections to one endpoint, each used by one thread at a time: `exchange` sends a request and reads its answer."""

    def __init__(self, endpoint: str, tls: Optional[ssl.SSLContext], connect_timeout: float, read_timeout: float):
        parts = urlsplit(endpoint)
        self._address = (parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme])
        self._tls = tls
        self._timeouts = (connect_timeout, read_timeout)
        self._mine = threading.local()
        self._all: list[_Connection] = []
        self._lock = threading.Lock()

    def _open(self) -> _Connection:
        sock = socket.create_connection(self._address, timeout=self._timeouts[0])
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as botocore (args.py _compute_socket_options)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._address[0])
            sock.settimeout(self._timeouts[1])
        except BaseException:
            sock.close()
            raise
        connection = _Connection(sock)
        with self._lock:
            self._all.append(connection)
        return connection

    def _drop(self, connection: _Connection) -> None:
        self._mine.connection = None
        connection.sock.close()
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)

    def exchange(self, head: bytes, body: bytes) -> Answer:
        """Send one request (its header section, then its body) and read the answer.

        The body of a 2xx answer is read so the connection carries the next request; on any other
        status the connection is dropped unread. WireError (or OSError) on any failure."""
        connection = getattr(self._mine, "connection", None)
        if connection is not None and connection.dropped():
            self._drop(connection)
            connection = None
        try:
            if connection is None:
                connection = self._mine.connection = self._open()
            connection.sock.sendall(head)
            connection.sock.sendall(body)
            answer, keep = self._answer(connection)
        except BaseException:
            if connection is not None:
                self._drop(connection)
            raise
        if not keep:
            self._drop(connection)
        return answer

    @staticmethod
    def _answer(connection: _Connection) -> tuple[Answer, bool]:
        while True:
            status_line, *lines = connection.head().split(b"\r\n")
            matched = STATUS_LINE.fullmatch(status_line)
            if not matched:
                raise WireError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
            status, fields = int(matched.group(2)), _fields(lines)
            if status == 101:
                raise WireError("the server switched protocols")
            if status >= 200:
                break  # 1xx: an interim answer, the final one follows (RFC 9110 15.2)
        answer = Answer(status, fields)
        if not 200 <= status < 300:
            return answer, False
        if "transfer-encoding" in fields:
            raise WireError("a chunked answer")
        keep = matched.group(1) == b"1" and "close" not in _tokens(fields.get("connection", ""))
        length = fields.get("content-length")
        if length is None:
            if status != 204:
                connection.rest()  # RFC 9112 6.3: without a length the body ends with the connection
            return answer, False
        if not length.isdigit() or int(length) > MAX_BODY_BYTES:
            raise WireError(f"an answer's Content-Length is {length[:20]!r}")
        connection.take(int(length))
        return answer, keep

    def close(self) -> None:
        """Close every connection opened so far (the threads that used them are done)."""
        with self._lock:
            opened, self._all = self._all, []
        for connection in opened:
            connection.sock.close()
