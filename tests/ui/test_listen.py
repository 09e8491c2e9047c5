"""``listen``: a port that is taken is an ``OSError`` whose reason is the system's own
sentence, which ``sealmem ui`` prints after ``cannot listen on 127.0.0.1:PORT: ``."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from sealmem.client.ui.server import listen


def test_a_taken_port_is_the_systems_one_sentence() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError, match="in use") as caught:
            listen(port)
    assert caught.value.errno == errno.EADDRINUSE
    assert caught.value.strerror == os.strerror(errno.EADDRINUSE)  # no address repeated


def test_it_listens_on_loopback_on_a_free_port() -> None:
    with listen(0) as sock:
        host, port = sock.getsockname()
        assert host == "127.0.0.1"
        assert port > 0
