"""Send bytes over TCP and time them: a receiver on one host, a sender on another.

``infra.netns.send_bytes`` starts both, each inside its host's namespace (notebook 10's first
transfer, and the tests)::

    python scripts/send_bytes.py receive ADDRESS PORT        # prints "listening", then the bytes received
    python scripts/send_bytes.py send ADDRESS PORT NBYTES TIMEOUT   # prints the seconds taken

The sender's seconds run from its first byte to the receiver's one-byte acknowledgement,
sent once everything has arrived.
"""

from __future__ import annotations

import socket
import sys
import time


def receive(address: str, port: int) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen()
    print("listening", flush=True)
    conn, _ = server.accept()
    received = 0
    while data := conn.recv(1 << 20):
        received += len(data)
    conn.sendall(b"k")  # the acknowledgement: everything arrived
    print(received, flush=True)


def send(address: str, port: int, nbytes: int, timeout: float) -> None:
    conn = socket.create_connection((address, port), timeout=timeout)
    start = time.perf_counter()
    conn.sendall(b"x" * nbytes)
    conn.shutdown(socket.SHUT_WR)
    conn.recv(1)
    print(time.perf_counter() - start)


if __name__ == "__main__":
    mode, address, port, *rest = sys.argv[1:]
    if mode == "receive":
        receive(address, int(port))
    else:
        send(address, int(port), int(rest[0]), float(rest[1]))
