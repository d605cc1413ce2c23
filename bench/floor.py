"""The floor: a three-process leader -> follower commit pipeline with nothing but sockets and fdatasync.

No Raft, no elections, no Kafka codec: what a KRaft commit must pay on this machine and nothing more, so that
kraftd's numbers (bench/quorum.py) are read against it rather than alone.

    python bench/floor.py                    # one in flight, then 64 in flight, plus a disk probe
    python bench/floor.py --json --seconds 5 --in-flight 1,8,64

The pipeline (all on loopback, every node on the same disk as kraftd's temporary directories):
1. The leader appends each group of pending records as one framed batch (crc32c over the payload), writes it
   and hands it to its fsync thread; parked follower fetches are answered as soon as the batch is written.
2. A follower long-polls ``(follower id, fetch offset)``, checks every batch's crc32c, writes, fdatasyncs and
   asks for the next offset, which tells the leader what it holds durably.
3. The high watermark is the median of (leader's fdatasynced end, both followers' fetch offsets); a record
   commits when the high watermark passes it. Latency is measured from the proposal to that moment.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import crc32c

LOOPBACK = "127.0.0.1"
FETCH = struct.Struct(">iq")  # follower id, fetch offset
REPLY = struct.Struct(">iqi")  # payload bytes, base offset, record count
FRAME = struct.Struct(">qiI")  # base offset, record count, crc32c of the records


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def summary_ms(latencies_s: list[float]) -> dict[str, float]:
    lat = sorted(latencies_s)
    return {
        f"p{k}_ms": round(percentile(lat, v) * 1000, 3)
        for k, v in (("50", 50), ("75", 75), ("99", 99), ("999", 99.9))
    }


# ---------------------------------------------------------------------------------------------- follower
def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("leader closed")
        buf += chunk
    return bytes(buf)


def follower(node_id: int, port: int, directory: str, record_size: int) -> None:
    fd = os.open(
        os.path.join(directory, f"follower-{node_id}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644
    )
    sock = socket.create_connection((LOOPBACK, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    offset = 0
    try:
        while True:
            sock.sendall(FETCH.pack(node_id, offset))
            size, base, count = REPLY.unpack(_read_exact(sock, REPLY.size))
            if not count:
                continue
            body = _read_exact(sock, size)
            if base != offset:
                raise RuntimeError(f"follower {node_id}: got offset {base}, expected {offset}")
            view = memoryview(body)
            pos = 0
            while pos < size:
                _, n, crc = FRAME.unpack_from(body, pos)
                end = pos + FRAME.size + n * record_size
                if crc32c.crc32c(view[pos + FRAME.size : end]) != crc:
                    raise RuntimeError(f"follower {node_id}: crc mismatch at {base}")
                pos = end
            os.write(fd, body)
            os.fdatasync(fd)
            offset += count
    except (ConnectionError, OSError):
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------- leader
class Leader:
    def __init__(self, directory: str, record_size: int) -> None:
        self.record = os.urandom(record_size)
        self.fd = os.open(os.path.join(directory, "leader.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.cond = threading.Condition()
        self.pending = 0  # records proposed, not yet in a batch
        self.log_end = 0
        self.synced_end = 0
        self.acked = {1: 0, 2: 0}
        self.hw = 0
        self.frames: list[tuple[int, int, bytes]] = []  # base offset, count, frame bytes
        self.sync_queue: list[int] = []
        self.fsyncs = 0
        self.stopped = False

    # --- proposals and the high watermark (callers hold self.cond)
    def _advance_hw(self) -> None:
        hw = sorted((self.synced_end, self.acked[1], self.acked[2]))[1]
        if hw > self.hw:
            self.hw = hw
            self.cond.notify_all()

    def propose(self, n: int = 1) -> int:
        """Queue ``n`` records; returns the offset one past the last of them."""
        with self.cond:
            self.pending += n
            self.cond.notify_all()
            return self.log_end + self.pending

    def wait_committed(self, end: int) -> None:
        with self.cond:
            while self.hw < end and not self.stopped:
                self.cond.wait()

    # --- the batcher: one frame per group of pending records
    def batcher(self) -> None:
        while True:
            with self.cond:
                while not self.pending and not self.stopped:
                    self.cond.wait()
                if self.stopped:
                    return
                n, self.pending = self.pending, 0
                base = self.log_end
            payload = self.record * n
            frame = FRAME.pack(base, n, crc32c.crc32c(payload)) + payload
            os.write(self.fd, frame)
            with self.cond:
                self.frames.append((base, n, frame))
                self.log_end = base + n
                self.sync_queue.append(self.log_end)
                self.cond.notify_all()

    def syncer(self) -> None:
        while True:
            with self.cond:
                while not self.sync_queue and not self.stopped:
                    self.cond.wait()
                if self.stopped:
                    return
                target = self.sync_queue[-1]
                self.sync_queue.clear()
            os.fdatasync(self.fd)
            with self.cond:
                self.fsyncs += 1
                self.synced_end = max(self.synced_end, target)
                self._advance_hw()

    def _frames_from(self, offset: int, limit: int = 1 << 20) -> tuple[list[bytes], int]:
        i = len(self.frames)
        while i > 0 and self.frames[i - 1][0] >= offset:
            i -= 1
        out, count, size = [], 0, 0
        for _, n, frame in self.frames[i:]:
            out.append(frame)
            count += n
            size += len(frame)
            if size >= limit:
                break
        return out, count

    def serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                node_id, offset = FETCH.unpack(_read_exact(conn, FETCH.size))
                with self.cond:
                    self.acked[node_id] = offset
                    self._advance_hw()
                    deadline = time.monotonic() + 0.5
                    while self.log_end <= offset and not self.stopped:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self.cond.wait(left)
                    parts, count = self._frames_from(offset) if self.log_end > offset else ([], 0)
                    if len(self.frames) > 8192:  # both followers hold the oldest half: drop it
                        low = min(self.acked.values())
                        keep = [f for f in self.frames if f[0] + f[1] > low]
                        self.frames = keep
                body = b"".join(parts)
                conn.sendall(REPLY.pack(len(body), offset, count) + body)
        except (ConnectionError, OSError):
            pass

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def pipeline(
    in_flight: int, seconds: float, record_size: int = 100, batch: int = 1, warmup: float = 0.5
) -> dict[str, Any]:
    """Run the three-process pipeline with ``in_flight`` proposals of ``batch`` records outstanding."""
    with tempfile.TemporaryDirectory(prefix="kraftd-floor-") as directory:
        leader = Leader(directory, record_size)
        lsock = socket.socket()
        lsock.bind((LOOPBACK, 0))
        lsock.listen(2)
        port = lsock.getsockname()[1]
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--follower", str(i), str(port), directory, str(record_size)]
            )
            for i in (1, 2)
        ]
        threads = [
            threading.Thread(target=leader.batcher, daemon=True),
            threading.Thread(target=leader.syncer, daemon=True),
        ]
        for _ in procs:
            conn, _ = lsock.accept()
            threads.append(threading.Thread(target=leader.serve, args=(conn,), daemon=True))
        for t in threads:
            t.start()
        latencies: list[float] = []
        lock = threading.Lock()
        start = time.perf_counter()
        measure_from = start + warmup
        stop_at = measure_from + seconds

        def client() -> None:
            mine: list[float] = []
            while True:
                t0 = time.perf_counter()
                if t0 >= stop_at:
                    break
                leader.wait_committed(leader.propose(batch))
                if t0 >= measure_from:
                    mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)

        clients = [threading.Thread(target=client) for _ in range(in_flight)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        fsyncs = leader.fsyncs
        leader.stop()
        lsock.close()
        for p in procs:
            p.kill()
            p.wait()
        os.close(leader.fd)
    return {
        "in_flight": in_flight,
        "batch": batch,
        "records_per_sec": round(len(latencies) * batch / seconds),
        **summary_ms(latencies),
        "leader_fsyncs_per_sec": round(fsyncs / (seconds + warmup)),
        "commits": len(latencies),
    }


def disk_probe(seconds: float = 2.0, size: int = 4096) -> dict[str, Any]:
    """Append ``size`` bytes + fdatasync in a loop, on the filesystem of the temporary directory."""
    with tempfile.TemporaryDirectory(prefix="kraftd-floor-") as directory:
        fd = os.open(os.path.join(directory, "probe"), os.O_WRONLY | os.O_CREAT, 0o644)
        block = os.urandom(size)
        lat: list[float] = []
        stop_at = time.perf_counter() + seconds
        while (t0 := time.perf_counter()) < stop_at:
            os.write(fd, block)
            os.fdatasync(fd)
            lat.append(time.perf_counter() - t0)
        os.close(fd)
    out = summary_ms(lat)
    return {
        "append_bytes": size,
        "p50_ms": out["p50_ms"],
        "p99_ms": out["p99_ms"],
        "ops_per_sec": round(len(lat) / seconds),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--follower":
        follower(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--in-flight", default="1,64", help="comma-separated numbers of outstanding proposals")
    ap.add_argument("--batch", type=int, default=1, help="records per proposal")
    ap.add_argument("--record-size", type=int, default=100)
    args = ap.parse_args()
    result: dict[str, Any] = {"load": os.getloadavg()[0], "disk": disk_probe()}
    result["pipeline"] = [
        pipeline(int(n), args.seconds, args.record_size, args.batch) for n in args.in_flight.split(",")
    ]
    if args.json:
        print(json.dumps(result))
        return
    d = result["disk"]
    print(f"load average {result['load']:.2f}")
    print(
        f"disk: append {d['append_bytes']} B + fdatasync p50 {d['p50_ms']} ms p99 {d['p99_ms']} ms ({d['ops_per_sec']}/s)"
    )
    for r in result["pipeline"]:
        print(
            f"pipeline, {r['in_flight']} x {r['batch']} in flight: {r['records_per_sec']} records/s  p50 {r['p50_ms']} ms  "
            f"p99 {r['p99_ms']} ms  p999 {r['p999_ms']} ms  ({r['leader_fsyncs_per_sec']} leader fsyncs/s)"
        )


if __name__ == "__main__":
    main()
