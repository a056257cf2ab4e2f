"""A TCP relay on loopback in front of a test server, which can die mid-request and come back.

From the client's side this is what a crashing server looks like: after a given number
of request bytes (in the middle of a body, if that is where the count ends) every open
connection is shut down, and new connections are refused until `restart()` listens
again on the same port. The server behind the relay keeps its storage, as a restarted
server keeps its disk. It works in front of any server, so fault tests do not depend
on one implementation.
"""

from __future__ import annotations

import socket
import threading
from typing import Optional

from tests.support.netutil import free_port

BUFFER = 64 * 1024


class FaultProxy:
    def __init__(self, upstream_port: int):
        self.port = free_port()
        self._upstream = ("127.0.0.1", upstream_port)
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._budget: Optional[int] = None  # request bytes let through before dying; None: no limit
        self._listener: Optional[socket.socket] = None
        self._acceptor: Optional[threading.Thread] = None
        self.deaths = 0
        self.restart()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def die_after(self, request_bytes: int) -> None:
        """Forward this many more bytes towards the server, then die."""
        with self._lock:
            self._budget = request_bytes

    def die(self) -> None:
        """Cut every open connection and stop listening."""
        with self._lock:
            listener, self._listener, self._budget = self._listener, None, None
            connections, self._connections = self._connections, set()
            if listener is not None:
                self.deaths += 1
        if listener is not None:
            _shut(listener)  # wakes the acceptor, which closes it
        for conn in connections:
            _shut(conn)  # wakes the pumps, which close it

    def restart(self) -> None:
        """Listen again on the same port (after `die`, or the first time)."""
        self.die()
        if self._acceptor is not None:
            self._acceptor.join()
        listener = socket.create_server(("127.0.0.1", self.port))
        with self._lock:
            self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self._acceptor.start()

    def close(self) -> None:
        self.die()
        if self._acceptor is not None:
            self._acceptor.join()

    def _accept(self, listener: socket.socket) -> None:
        with listener:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:
                    return
                try:
                    upstream = socket.create_connection(self._upstream)
                except OSError:
                    client.close()
                    continue
                with self._lock:
                    alive = self._listener is listener
                    if alive:
                        self._connections.update((client, upstream))
                if not alive:
                    client.close()
                    upstream.close()
                    return
                back = threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True)
                back.start()
                threading.Thread(target=self._relay, args=(client, upstream, back), daemon=True).start()

    def _relay(self, client: socket.socket, upstream: socket.socket, back: threading.Thread) -> None:
        self._pump(client, upstream, True)
        back.join()
        client.close()
        upstream.close()

    def _spend(self, data: bytes) -> tuple[bytes, bool]:
        """The part of `data` within the budget, and whether the budget is now spent."""
        with self._lock:
            if self._budget is None:
                return data, False
            allowed = data[:self._budget]
            self._budget -= len(allowed)
            return allowed, self._budget == 0

    def _pump(self, src: socket.socket, dst: socket.socket, towards_server: bool) -> None:
        try:
            while data := src.recv(BUFFER):
                spent = False
                if towards_server:
                    data, spent = self._spend(data)
                if data:
                    dst.sendall(data)
                if spent:
                    self.die()
                    return
        except OSError:
            pass
        finally:
            # Either direction ending ends the connection; `_relay` closes the sockets once both pumps are done.
            _shut(dst)
            _shut(src)
            with self._lock:
                self._connections.discard(src)
                self._connections.discard(dst)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
