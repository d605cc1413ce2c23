"""Large shared response bodies written as they are (kwire.server contract 11d, issue 24).

Contract 11d: a fast reply whose shared body (kwire.answers contract 11a) is ``LARGE`` bytes or more is the
:data:`Frame` (size and response header, the body itself): the one encoded body is handed to each connection's
socket write as it is, in a write of its own after that frame's size and header (joined with the small frames
before it, in order), never joined into a frame per reply. A copy of the body per connection (a 600 KB committed
batch to 100 observers; catch-up answers of up to 8 MiB) was a large part of the leader's fan-out step at 1M
partitions. Contract 2a (one write for the responses ready together) then holds per piece.
"""

from __future__ import annotations

Frame = bytes | tuple[bytes, bytes]  # a whole frame, or (size and header, a large shared body)
LARGE = 64 * 1024


def pieces(frames: list[Frame]) -> list[bytes]:
    """The socket writes of ``frames``, in order: small frames joined with the next large body's head, each large
    body alone."""
    out: list[bytes] = []
    small: list[bytes] = []
    for f in frames:
        small.append(f[0] if isinstance(f, tuple) else f)
        if isinstance(f, tuple):
            out += [b"".join(small), f[1]]
            small = []
    return [*out, b"".join(small)] if small else out
