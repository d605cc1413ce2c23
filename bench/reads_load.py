"""The throughput phases of bench/reads.py (issue 25: a measure that holds still between runs of one tree).

Contracts:
1. One pool of client processes serves every phase of a run (the same clients measure the leader alone and the
   spread), started and warmed up (imported, one short unmeasured phase) before the first measured phase.
2. A phase is a window of ``seconds`` that starts at one CLOCK_MONOTONIC instant for every process: the clients
   connect first, then wait for it; only responses read inside the window count, and the servers' CPU, their
   run-queue waits and the machine's idle time are sampled at the window's two ends, so reads and CPU cover the
   same interval (before, a client spawned late ran part of its phase alone and the CPU was taken over the pool's
   start-up).
3. The phases alternate (alone, spread, spread, alone, ...: ABBA) over ``rounds`` rounds, so drift over the run
   (a neighbour, a warming cache) weighs on both alike; the ratio reported is the median spread over the median
   leader alone, with each round's own ratio beside it.
4. What the window shows besides the rate, per server (leader first): CPU seconds per second, and seconds per
   second runnable but waiting for a CPU (``/proc/<pid>/schedstat``, the main thread); for the machine, idle
   cores (``/proc/stat`` idle + iowait), cores stolen by the hypervisor and cores that processes outside the run
   used (busy minus servers and clients): a phase bound by the servers' CPU has little idle time and the servers
   queue; a phase bound by waiting (barriers) leaves cores idle. A neighbour holding one core leaves the leader
   alone its core but takes the spread's second one, so ``others_cores`` > ~0.1 marks a phase (and a ratio) that
   measured the neighbour (issue 25, session 14).
5. ``--client stream`` (the default) reads each connection with a stream reader in its own task and splits the
   frames; ``--client protocol`` counts the responses by their length prefixes in the protocol's callback and
   sends the next requests once per turn of the loop: the same reads for less client CPU (issue 25, session 16).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.limits import DEFAULT_MAX_IN_FLIGHT as MAX_IN_FLIGHT

BROKER = 4
DESCRIBE_VERSION = 4
DESCRIBE = DescribeConfigsRequest(
    resources=[DescribeConfigsResource(resource_type=BROKER, resource_name="1", configuration_keys=None)]
)
LEAD_IN = 0.3  # seconds between a phase's order and its window's start: the clients connect meanwhile


class _Pipeline(asyncio.Protocol):
    """Contract 5: one connection's pipelined reads, counted from the length prefixes in the protocol's callback
    (no stream reader, task wake-up or frame copy per response); every 64th response is decoded to check its
    error code."""

    def __init__(
        self, frame: bytes, depth: int, end: float, out: dict[str, float], done: asyncio.Future[None]
    ):
        self.frame, self.depth, self.end, self.out, self.done = frame, depth, end, out, done
        self.buf = bytearray()
        self.outstanding = self.seen = self.due = 0
        self.transport: asyncio.Transport | None = None
        self.cpu0 = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def start(self) -> None:
        assert self.transport is not None
        self.transport.write(self.frame * self.depth)
        self.outstanding = self.depth

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, have, n, failed = 0, len(buf), 0, 0
        while have - pos >= 4:
            end = pos + 4 + int.from_bytes(buf[pos : pos + 4], "big")
            if end > have:
                break
            self.seen += 1
            if self.seen % 64 == 0:
                _, resp = decode_response(bytes(buf[pos + 4 : end]), 32, DESCRIBE_VERSION)
                failed += resp.results[0].error_code != 0
            n += 1
            pos = end
        if not n:
            return
        del buf[:pos]
        self.outstanding -= n
        out = self.out
        out["failed"] += failed
        if time.monotonic() < self.end:  # contract 2: only the window's responses count
            out["ok"] += n - failed
            # the next requests leave once per turn of the loop, as a stream reader's task would
            if not self.due:
                asyncio.get_running_loop().call_soon(self._send)
            self.due += n
            return
        if not out["cpu"]:
            out["cpu"] = time.process_time() - out["cpu0"]
        if not self.outstanding and not self.done.done():
            self.done.set_result(None)

    def _send(self) -> None:
        assert self.transport is not None
        self.transport.write(self.frame * self.due)
        self.outstanding += self.due
        self.due = 0

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(SystemExit(f"a controller closed the connection ({exc})"))


async def _hammer_stream(
    ports: list[int], in_flight: int, start_at: float, seconds: float
) -> dict[str, float]:
    """A lean pipelined client, so the servers and not the client's codec bound throughput: the request is
    encoded once, responses are counted by frame and every 64th is decoded to check its error code."""
    frame = encode_frame(encode_request(32, DESCRIBE_VERSION, 1, "bench-reads", DESCRIBE))
    end = start_at + seconds
    out = {"ok": 0, "failed": 0, "cpu": 0.0, "late": 0.0}
    per = max(1, in_flight // len(ports))
    conns = -(-per // MAX_IN_FLIGHT)  # a server handles 16 requests of a connection at once (kwire.limits)
    opened = [(p, await asyncio.open_connection("127.0.0.1", p)) for p in ports for _ in range(conns)]
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    out["late"] = time.monotonic() - start_at
    cpu0 = time.process_time()

    async def one(port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, depth: int) -> None:
        decoder = FrameDecoder()
        writer.write(frame * depth)
        outstanding, seen = depth, 0
        while outstanding:
            data = await reader.read(1 << 16)
            if not data:
                raise SystemExit(f"controller on port {port} closed the connection")
            frames = decoder.feed(data)
            outstanding -= len(frames)
            inside = time.monotonic() < end  # contract 2: only the window's responses count
            if not inside and not out["cpu"]:
                out["cpu"] = time.process_time() - cpu0
            for f in frames:
                seen += 1
                if seen % 64 == 0:
                    _, resp = decode_response(f, 32, DESCRIBE_VERSION)
                    if resp.results[0].error_code != 0:
                        out["failed"] += 1
                        continue
                out["ok"] += inside
            if inside and frames:
                writer.write(frame * len(frames))
                outstanding += len(frames)
        writer.close()

    await asyncio.gather(*(one(p, r, w, max(1, per // conns)) for p, (r, w) in opened))
    out["cpu"] = out["cpu"] or time.process_time() - cpu0
    return out


async def _hammer_protocol(
    ports: list[int], in_flight: int, start_at: float, seconds: float
) -> dict[str, float]:
    """A lean pipelined client, so the servers and not the client bound throughput: the request is encoded
    once, responses are counted by frame in the protocol's callback (contract 5)."""
    frame = encode_frame(encode_request(32, DESCRIBE_VERSION, 1, "bench-reads", DESCRIBE))
    end = start_at + seconds
    out = {"ok": 0, "failed": 0, "cpu": 0.0, "late": 0.0, "cpu0": 0.0}
    per = max(1, in_flight // len(ports))
    conns = -(-per // MAX_IN_FLIGHT)  # a server handles 16 requests of a connection at once (kwire.limits)
    loop = asyncio.get_running_loop()
    pipes = []
    for p in ports:
        for _ in range(conns):
            pipe = _Pipeline(frame, max(1, per // conns), end, out, loop.create_future())
            await loop.create_connection(lambda pipe=pipe: pipe, "127.0.0.1", p)
            pipes.append(pipe)
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    out["late"] = time.monotonic() - start_at
    out["cpu0"] = time.process_time()
    for pipe in pipes:
        pipe.start()
    await asyncio.gather(*(pipe.done for pipe in pipes))
    out["cpu"] = out["cpu"] or time.process_time() - out["cpu0"]
    for pipe in pipes:
        assert pipe.transport is not None
        pipe.transport.close()
    return out


def worker(args: tuple[list[int], int, float, float, str]) -> dict[str, float]:
    *rest, client = args
    return asyncio.run((_hammer_protocol if client == "protocol" else _hammer_stream)(*rest))


def ready(_: object = None) -> int:
    """Contract 1: a pool process has imported this module."""
    return os.getpid()


def _sample(pids: list[int]) -> tuple[list[float], list[float], float, float, float]:
    """Per process CPU seconds (utime + stime) and run-queue wait seconds; the machine's idle, stolen (by the
    hypervisor) and busy core-seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, wait = [], []
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu.append((int(fields[11]) + int(fields[12])) / tick)  # utime, stime (fields 14 and 15 of stat(5))
        wait.append(int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9)
    # user nice system idle iowait irq softirq steal (proc(5)); busy: the CPU the kernel gave to any process
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(x) / tick for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return cpu, wait, idle + iowait, steal, user + nice + system + irq + softirq


def _sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.monotonic()))


def phase(
    pool: Pool,
    ports: list[int],
    workers: int,
    in_flight: int,
    seconds: float,
    servers: list[int],
    client: str = "stream",
) -> dict:
    """Contract 2: one measured window."""
    start_at = time.monotonic() + LEAD_IN
    pending = pool.map_async(worker, [(ports, in_flight, start_at, seconds, client)] * workers)
    _sleep_until(start_at)
    cpu0, wait0, idle0, steal0, busy0 = _sample(servers)
    _sleep_until(start_at + seconds)
    cpu1, wait1, idle1, steal1, busy1 = _sample(servers)
    results = pending.get()
    ok, cpu = sum(r["ok"] for r in results), sum(cpu1) - sum(cpu0)
    client = sum(r["cpu"] for r in results)
    return {
        "reads_per_s": ok / seconds,
        "failed": sum(r["failed"] for r in results),
        "server_cpu_per_s": cpu / seconds,
        "each_server_cpu_per_s": [round((b - a) / seconds, 2) for a, b in zip(cpu0, cpu1, strict=True)],
        "each_server_wait_per_s": [round((b - a) / seconds, 2) for a, b in zip(wait0, wait1, strict=True)],
        "idle_cores": round((idle1 - idle0) / seconds, 2),
        "stolen_cores": round((steal1 - steal0) / seconds, 2),
        "client_cpu_per_s": client / seconds,
        "others_cores": round((busy1 - busy0 - cpu - client) / seconds, 2),
        "client_late_ms": round(max(r["late"] for r in results) * 1000, 1),
        "reads_per_server_cpu_s": ok / cpu if cpu else float("nan"),
    }


def rounds(
    pool: Pool, lead_port: int, ports: list[int], args: Any, servers: list[int]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Contracts 1 and 3: the warm-up, then ``args.rounds`` ABBA rounds; (summary, alone phases, spread phases)."""
    pool.map(ready, range(args.workers))
    # contract 1: unmeasured
    phase(pool, ports, args.workers, args.in_flight, args.warmup, servers, args.client)
    alone: list[dict[str, Any]] = []
    spread: list[dict[str, Any]] = []
    for i in range(args.rounds):
        order = [(alone, [lead_port]), (spread, ports)]
        for into, targets in order if i % 2 == 0 else order[::-1]:
            into.append(
                phase(pool, targets, args.workers, args.in_flight, args.seconds, servers, args.client)
            )
    a = [p["reads_per_s"] for p in alone]
    s = [p["reads_per_s"] for p in spread]
    each = [round(y / x, 2) for x, y in zip(a, s, strict=True)]
    summary = {
        "leader_alone_reads_per_s_each": [round(x) for x in a],
        "three_controllers_reads_per_s_each": [round(y) for y in s],
        "spread_ratio_each": each,
        "spread_ratio_min": min(each),
        "spread_ratio_max": max(each),
        "spread_ratio_stdev": round(statistics.stdev(each), 3) if len(each) > 1 else 0.0,
        "phases": [_brief(name, p) for name, p in _in_order(alone, spread)],
    }
    return summary, alone, spread


def _in_order(alone: list[Any], spread: list[Any]) -> list[tuple[str, Any]]:
    out = []
    for i, (a, s) in enumerate(zip(alone, spread, strict=True)):
        out += [("alone", a), ("spread", s)] if i % 2 == 0 else [("spread", s), ("alone", a)]
    return out


def _brief(name: str, p: dict[str, Any]) -> list[Any]:
    """One phase in the order it ran: [name, reads/s, CPU/s each server, run-queue wait/s each, client CPU/s,
    idle cores, stolen cores, cores other processes used]."""
    cpu, wait, client = (
        p["each_server_cpu_per_s"],
        p["each_server_wait_per_s"],
        round(p["client_cpu_per_s"], 2),
    )
    return [
        name,
        round(p["reads_per_s"]),
        cpu,
        wait,
        client,
        p["idle_cores"],
        p["stolen_cores"],
        p["others_cores"],
    ]


def median_phase(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """The phase with the median rate (contract 3), to report its CPU figures beside the median."""
    return sorted(phases, key=lambda p: p["reads_per_s"])[len(phases) // 2]
