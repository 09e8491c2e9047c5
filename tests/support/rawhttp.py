"""Reading a hub's answer off a raw socket, for tests that speak HTTP by hand."""

from __future__ import annotations

import json
import socket

__all__ = ["answer"]


def answer(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, object]]:
    """Status, headers and JSON body of the answer (``socket.timeout`` if none comes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            raise ConnectionError(f"the hub closed the connection without an answer: {data!r}")
        data += part
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        part = sock.recv(65536)
        if not part:
            break
        rest += part
    return int(status_line.split()[1]), headers, json.loads(rest[:length] or b"{}")
