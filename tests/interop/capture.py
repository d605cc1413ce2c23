"""Captures for the decoder tests: a recording loopback TCP proxy (no privileges needed) and tcpdump on lo.

Contracts:
1. :class:`RecordingProxy` forwards one listening port to a target and writes every byte both ways into a pcap
   (Ethernet/IPv4/TCP framing with true sequence numbers, a SYN handshake per connection and a FIN at close),
   so the decoder sees exactly what a packet capture of the same exchange holds.
2. :func:`tcpdump` captures loopback traffic on the given ports into a pcap while its ``with`` block runs; it is
   None when tcpdump is missing or may not capture here.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.decode.pcap import TCP_ACK, TCP_FIN, TCP_SYN, PcapWriter
from tools.local_quorum import free_ports


class RecordingProxy:
    def __init__(self, pcap: Path, target: tuple[str, int]) -> None:
        self.target = target
        (self.port,) = free_ports(1)
        self._writer = PcapWriter(pcap)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        assert self._ready.wait(10), "proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._writer.close()

    def _record(self, src: tuple[str, int], dst: tuple[str, int], seq: int, data: bytes, flags: int) -> None:
        with self._lock:
            self._writer.write(time.time(), src, dst, seq, data, flags)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = writer.get_extra_info("peername")[:2]
        server = ("127.0.0.1", self.port)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        seqs = {client: 1000, server: 5000}
        self._record(client, server, seqs[client] - 1, b"", TCP_SYN)
        self._record(server, client, seqs[server] - 1, b"", TCP_SYN | TCP_ACK)

        async def pump(
            r: asyncio.StreamReader, w: asyncio.StreamWriter, src: tuple[str, int], dst: tuple[str, int]
        ) -> None:
            try:
                while data := await r.read(65536):
                    self._record(src, dst, seqs[src], data, TCP_ACK)
                    seqs[src] += len(data)
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                self._record(src, dst, seqs[src], b"", TCP_FIN | TCP_ACK)
                w.close()

        await asyncio.gather(
            pump(reader, up_writer, client, server),
            pump(up_reader, writer, server, client),
            return_exceptions=True,
        )


@contextmanager
def tcpdump(pcap: Path, ports: list[int]) -> Iterator[bool]:
    """Contract 2: yields True while capturing, False when tcpdump cannot capture here."""
    exe = shutil.which("tcpdump")
    if exe is None:
        yield False
        return
    expr = " or ".join(f"tcp port {p}" for p in ports)
    log = pcap.with_suffix(".log")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-w", str(pcap), expr],
            stdout=out,
            stderr=out,
        )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and b"listening on" not in log.read_bytes() and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is not None:
        yield False
        return
    try:
        yield True
    finally:
        time.sleep(0.5)  # let the last packets of the exchange reach the capture buffer
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
