"""The small PUTs' HTTP/1.1 transport (wire.py) against a loopback server answering with scripted bytes:
what it reads, when it keeps or drops a connection, and what it refuses."""

from __future__ import annotations

import socket
import threading

import pytest

from inference_platform.weights.s3.wire import Connections, WireError, host_header

OK = b"HTTP/1.1 200 OK\r\nETag: \"e1\"\r\nContent-Length: 0\r\n\r\n"


class Scripted:
    """Accepts connections; answers each request with the next scripted reply (bytes, then whether to close)."""

    def __init__(self, replies: list[tuple[bytes, bool]]):
        self.replies = list(replies)
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = threading.Semaphore(0)  # released as each connection is closed
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        try:
            self._answer(conn)
        finally:
            conn.close()
            self.closed.release()

    def _answer(self, conn: socket.socket) -> None:
        buffer = b""
        while self.replies:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(buffer) < length:
                buffer += conn.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + buffer[:length])
            buffer = buffer[length:]
            reply, close = self.replies.pop(0)
            conn.sendall(reply)
            if close:
                return


@pytest.fixture
def scripted():
    servers = []

    def start(*replies: tuple[bytes, bool]) -> tuple[Scripted, Connections]:
        servers.append(Scripted(list(replies)))
        return servers[-1], Connections(servers[-1].endpoint, None, 5, 5)
    yield start
    for server in servers:
        server.listener.close()


def _put(connections: Connections, body: bytes = b"x" * 100):
    return connections.exchange(f"PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: {len(body)}\r\n\r\n".encode(), body)


def test_a_kept_alive_connection_carries_the_next_request(scripted):
    server, connections = scripted((OK, False), (OK.replace(b"e1", b"e2"), False))
    assert _put(connections).headers["etag"] == '"e1"'
    assert _put(connections).headers["etag"] == '"e2"'
    assert server.connections == 1 and server.requests[1].endswith(b"x" * 100)
    connections.close()


def test_interim_answers_are_skipped_and_fields_are_case_blind(scripted):
    _, connections = scripted((b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nEtAg: \"e\"\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 3\r\n\r\nabc", False))
    answer = _put(connections)
    assert (answer.status, answer.headers["etag"], answer.headers["x-a"]) == (200, '"e"', "1, 2")


@pytest.mark.parametrize("closing", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n\r\nbody to the end",  # no length: the body ends with the connection
], ids=["connection-close", "http-1.0", "no-length"])
def test_an_answer_that_ends_the_connection_makes_the_next_request_open_another(scripted, closing):
    server, connections = scripted((closing, True), (OK, False))
    assert _put(connections).status == 200
    assert _put(connections).status == 200
    assert server.connections == 2


def test_a_connection_the_server_closed_while_idle_is_opened_again_before_sending(scripted):
    server, connections = scripted((OK, True), (OK, False))  # the server closes after answering, unannounced
    assert _put(connections).status == 200
    assert server.closed.acquire(timeout=5)
    assert _put(connections).status == 200
    assert server.connections == 2


def test_an_error_answer_is_returned_and_its_connection_dropped_unread(scripted):
    error = b"HTTP/1.1 503 Slow Down\r\nContent-Length: 9999\r\n\r\n<Error>"
    server, connections = scripted((error, False), (OK, False))
    assert _put(connections).status == 503
    assert _put(connections).status == 200
    assert server.connections == 2


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"HTTP/2 200\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # then the server closes
    b"",  # closed without an answer
], ids=["chunked", "http-2", "no-colon", "space-in-name", "two-lengths", "negative-length", "switching", "short-body", "closed"])
def test_answers_it_does_not_read_raise_and_drop_the_connection(scripted, reply):
    server, connections = scripted((reply, True), (OK, False))
    with pytest.raises(WireError):
        _put(connections)
    assert _put(connections).status == 200
    assert server.connections == 2


def test_an_answer_that_never_comes_times_out():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog) and never answers
    connections = Connections(f"http://127.0.0.1:{listener.getsockname()[1]}", None, 1, 0.2)
    with pytest.raises(OSError):  # socket.timeout
        _put(connections)
    listener.close()


def test_close_closes_every_connection_opened(scripted):
    server, connections = scripted((OK, False), (OK, False))
    done = [threading.Thread(target=_put, args=(connections,)) for _ in range(2)]
    for thread in done:
        thread.start()
    for thread in done:
        thread.join()
    assert server.connections == 2  # one per thread
    connections.close()
    assert connections._all == []


@pytest.mark.parametrize(("endpoint", "host"), [
    ("http://S3.Example.Cloud", "s3.example.cloud"), ("https://h:443", "h"), ("http://h:80/", "h"),
    ("https://h:8443", "h:8443"), ("http://[::1]:8333", "[::1]:8333"),
])
def test_host_header_is_the_one_botocore_signs(endpoint, host):
    from botocore.auth import _host_from_url

    assert host_header(endpoint) == host == _host_from_url(endpoint + "/b/k")
