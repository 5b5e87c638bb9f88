"""An exec's output as the engine frames it (``[stream, 0, 0, 0, size:4]`` then ``size``
bytes; stream 1 stdout, 2 stderr), read with the socket's own blocking ``recv``.

Not docker-py's ``frames_iter``: it polls the descriptor before every read, and over TLS
the rest of a record already decrypted into the SSL object's buffer does not show on
the descriptor, so a line the kennel printed waited for its next bytes, often the end
of the run (a remote engine's progress arrived all at once when the task ended). ``recv``
on an SSL socket returns what is buffered first; on a unix socket or ssh's pipes it is
the plain read it always was.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

HEADER = struct.Struct(">BxxxL")
CHUNK = 64 * 1024


def frames(sock: Any) -> Iterator[tuple[int, bytes]]:
    """(stream, bytes) until the engine closes the stream; a frame cut short by the
    close is given as far as it came."""
    buf = bytearray()

    def fill(n: int) -> bool:
        while len(buf) < n:
            chunk = sock.recv(CHUNK)
            if not chunk:
                return False
            buf.extend(chunk)
        return True

    while True:
        if not fill(HEADER.size):
            return
        stream, size = HEADER.unpack_from(buf)
        del buf[: HEADER.size]
        while size:
            if not buf and not fill(1):
                return
            part = bytes(buf[:size])
            del buf[: len(part)]
            size -= len(part)
            yield stream, part


__all__ = ["frames"]
