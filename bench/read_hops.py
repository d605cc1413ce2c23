"""The floor of a read index on this machine (issue 25): a stale read's hops against a linearizable one's, no kraftd.

Three bare asyncio echo processes on loopback stand in for the controllers; one client sends a small frame at
a time (closed loop, like bench/reads.py's latency phase) and times it:
- ``direct``: client -> F -> client (the stale read's two hops);
- ``relayed``: client -> F -> L -> F -> client (the follower's linearizable read: the read index asks the leader,
  one ReadOffset round trip, reads invariant 2: no lease, so no hop can be skipped).
Each server does nothing but read a frame and write it on (asyncio protocols, no parsing), so the figures are
the sockets, the wake-ups and the event loop alone: the lowest latency any Python read index could reach here,
and the lowest ``relayed p99 / direct p99`` it could show. ``--slices`` alternates the two kinds so a noisy
neighbour hurts both alike.

Usage: .venv/bin/python bench/read_hops.py [--samples K] [--base-port P] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import time
from typing import Any

FRAME = b"x" * 64


class _Forward(asyncio.Protocol):
    """Echo each 64-byte frame back, or (the follower, relaying) to the leader and its answer back."""

    def __init__(self, upstream: tuple[str, int] | None) -> None:
        self.upstream, self.buf, self.transport = upstream, b"", None
        self.up: asyncio.Transport | None = None
        self.relay = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= len(FRAME):
            frame, self.buf = self.buf[: len(FRAME)], self.buf[len(FRAME) :]
            if frame[:1] == b"r" and self.up is not None:  # a relayed read: one round trip to the leader
                self.up.write(frame)
            else:
                assert self.transport is not None
                self.transport.write(frame)


class _Back(asyncio.Protocol):
    def __init__(self, down: _Forward) -> None:
        self.down = down

    def connection_made(self, transport: Any) -> None:
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        assert self.down.transport is not None
        self.down.transport.write(data)


def _serve(port: int, upstream: int | None) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()

        def made() -> _Forward:
            fwd = _Forward(None)
            if upstream is not None:

                async def connect() -> None:
                    t, _ = await loop.create_connection(lambda: _Back(fwd), "127.0.0.1", upstream)
                    fwd.up = t  # type: ignore[assignment]

                loop.create_task(connect())
            return fwd

        server = await loop.create_server(made, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


async def _times(port: int, n: int, kind: bytes) -> list[float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.sleep(0.05)  # the follower's connection to the leader
    frame = kind + FRAME[1:]
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        writer.write(frame)
        await reader.readexactly(len(FRAME))
        out.append((time.perf_counter() - t0) * 1e6)
    writer.close()
    return out


def _free_ports() -> tuple[int, int]:
    socks = [socket.socket() for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports[0], ports[1]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000, help="reads of each kind")
    ap.add_argument("--slices", type=int, default=10)
    ap.add_argument("--base-port", type=int, default=None, help="2 ports from here (default: free ones)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    lead, fol = _free_ports() if args.base_port is None else (args.base_port, args.base_port + 1)
    leader = ctx.Process(target=_serve, args=(lead, None), daemon=True)
    follower = ctx.Process(target=_serve, args=(fol, lead), daemon=True)
    leader.start()
    time.sleep(0.5)
    follower.start()
    time.sleep(1.0)
    try:
        lat: dict[str, list[float]] = {"direct": [], "relayed": []}
        per = max(1, args.samples // args.slices)
        asyncio.run(_times(fol, 200, b"r"))  # warm-up
        for _ in range(args.slices):
            lat["relayed"] += asyncio.run(_times(fol, per, b"r"))
            lat["direct"] += asyncio.run(_times(fol, per, b"d"))
    finally:
        follower.terminate()
        leader.terminate()
    res: dict[str, Any] = {}
    for kind, xs in lat.items():
        res[f"{kind}_p50_us"] = round(statistics.median(xs), 1)
        res[f"{kind}_p99_us"] = round(_pct(xs, 0.99), 1)
    res["relayed_p99_vs_direct_p99"] = round(res["relayed_p99_us"] / res["direct_p99_us"], 2)
    res["relayed_p50_vs_direct_p99"] = round(res["relayed_p50_us"] / res["direct_p99_us"], 2)
    print(json.dumps(res) if args.json else "\n".join(f"{k:28} {v}" for k, v in res.items()))


if __name__ == "__main__":
    main()
