"""tests.chaos.proxy contract 2: a stalled direction holds bytes until the heal, and a sender that gives up
during the stall closes the pair at once (no idle connection left open in the harness or the target node)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.chaos.proxy import Mode, Proxy

pytestmark = pytest.mark.timeout(30)


class Target:
    """A plain TCP server recording, per accepted connection, the bytes read and when it saw EOF."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytearray] = []
        self.closed: list[bool] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            i = len(self.received)
            self.received.append(bytearray())
            self.closed.append(False)
            threading.Thread(target=self._read, args=(conn, i), daemon=True).start()

    def _read(self, conn: socket.socket, i: int) -> None:
        with conn:
            while data := conn.recv(65536):
                self.received[i] += data
        self.closed[i] = True


@pytest.fixture
def link() -> Iterator[tuple[Proxy, Target, int]]:
    target = Target()
    proxy = Proxy()
    port = proxy.add("l", ("127.0.0.1", target.port))
    yield proxy, target, port
    proxy.close()
    target.sock.close()


def _until(pred: object, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_stalled_direction_holds_bytes_until_the_heal(link: tuple[Proxy, Target, int]) -> None:
    proxy, target, port = link
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(b"before ")
    _until(lambda: target.received and bytes(target.received[0]) == b"before ", "the first bytes")
    proxy.set("l", up=Mode.DROP)
    client.sendall(b"held ")
    client.sendall(b"in order")
    time.sleep(0.3)
    assert bytes(target.received[0]) == b"before "
    proxy.set("l")
    _until(lambda: bytes(target.received[0]) == b"before held in order", "the held bytes after the heal")
    client.close()
    _until(lambda: target.closed[0], "the close after the heal")


def test_a_sender_closing_during_a_stall_closes_the_pair_at_once(link: tuple[Proxy, Target, int]) -> None:
    proxy, target, port = link
    proxy.set("l", up=Mode.DROP)
    clients = []
    for _ in range(3):  # a muted node's peer: request, time out, close, reconnect
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(b"a request nobody answers")
        clients.append(c)
    _until(lambda: len(target.closed) == 3, "three connections at the target")
    for c in clients:
        c.close()
    _until(lambda: all(target.closed), "the target's side of every pair closed while the stall lasts", 2.0)
    assert all(r == b"" for r in target.received)  # held bytes of a closed sender are never delivered
    assert sum(len(lk._conns) for lk in proxy.links.values()) == 0
