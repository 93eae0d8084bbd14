"""Helpers for tests of the private Unix socket endpoint (issue #22)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from desktop_mem.api.loopback import SOCKET_NAME, UNIX_PREFIX


def dead_private_socket(base: Path) -> str:
    """A `unix:` endpoint that passes the forwarder's ownership checks but where nothing listens
    (a writer that just stopped): connecting is refused."""
    folder = base / "desktop-mem-dead"
    folder.mkdir(mode=0o700)
    path = folder / SOCKET_NAME
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()  # never listened: the socket file stays, connections are refused
    os.chmod(folder, 0o700)
    return UNIX_PREFIX + str(path)
