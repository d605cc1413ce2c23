"""Record batch v2 throughput: kwire against kafka-python 3.0.12, measured in the same run.

Workload (issue 3 §8): one batch of 100 records x 100-byte values (null keys, no headers), uncompressed and
lz4. "build" encodes the batch from the values; "parse" decodes it, verifies the CRC-32C and materialises every
record. Targets: build >= 2.5x and parse >= 2x kafka-python. Usage: .venv/bin/python bench/records.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import timeit
from collections.abc import Callable
from functools import partial

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kwire.compression import Compression
from kwire.records import build_data_batch, decode_batch

N_RECORDS = 100
VALUE_SIZE = 100
TS = 1_700_000_000_000


def _values() -> list[bytes]:
    # Half random, half repetitive so lz4 has something to do, as real metadata records would.
    return [os.urandom(VALUE_SIZE // 2) + bytes([i % 7]) * (VALUE_SIZE // 2) for i in range(N_RECORDS)]


def kp_build(values: list[bytes], codec: int) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, v in enumerate(values):
        b.append(i, timestamp=TS, key=None, value=v, headers=[])
    return bytes(b.build())


def kp_parse(raw: bytes) -> int:
    batch = DefaultRecordBatch(bytearray(raw))
    if not batch.validate_crc():
        raise RuntimeError("crc")
    return sum(1 for _ in batch)


def our_build(values: list[bytes], codec: Compression) -> bytes:
    return build_data_batch(values, base_offset=0, partition_leader_epoch=0, timestamp=TS, compression=codec)


def our_parse(raw: bytes) -> int:
    return len(decode_batch(raw).records)


def _pair_us(
    ours: Callable[[], object], theirs: Callable[[], object], rounds: int = 7
) -> tuple[float, float]:
    """Best time per call of each, measured in alternating rounds so both see the same machine load."""
    t_ours, t_theirs = timeit.Timer(ours), timeit.Timer(theirs)
    n_ours, _ = t_ours.autorange()
    n_theirs, _ = t_theirs.autorange()
    best_ours = best_theirs = float("inf")
    for _ in range(rounds):
        best_ours = min(best_ours, t_ours.timeit(n_ours) / n_ours)
        best_theirs = min(best_theirs, t_theirs.timeit(n_theirs) / n_theirs)
    return best_ours * 1e6, best_theirs * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    args = ap.parse_args()
    values = _values()
    rows = []
    for codec in (Compression.NONE, Compression.LZ4):
        ours_raw, kp_raw = our_build(values, codec), kp_build(values, int(codec))
        assert kp_parse(ours_raw) == N_RECORDS and our_parse(kp_raw) == N_RECORDS  # interoperable both ways
        for op, ours, theirs in (
            ("build", partial(our_build, values, codec), partial(kp_build, values, int(codec))),
            ("parse", partial(our_parse, ours_raw), partial(kp_parse, kp_raw)),
        ):
            o_us, k_us = _pair_us(ours, theirs)
            rows.append(
                {
                    "op": op,
                    "codec": codec.name.lower(),
                    "kwire_us": round(o_us, 1),
                    "kafka_python_us": round(k_us, 1),
                    "ratio": round(k_us / o_us, 2),
                }
            )
    targets = {"build": 2.5, "parse": 2.0}
    if args.json:
        print(
            json.dumps(
                {
                    "bench": "records",
                    "records": N_RECORDS,
                    "value_bytes": VALUE_SIZE,
                    "rows": rows,
                    "targets": targets,
                }
            )
        )
        return
    print(
        f"batch of {N_RECORDS} records x {VALUE_SIZE} bytes (best of 7 alternating rounds, microseconds per batch)"
    )
    print(f"{'op':<6} {'codec':<6} {'kwire':>10} {'kafka-python':>13} {'ratio':>7} {'target':>7}")
    for r in rows:
        ok = "ok" if r["ratio"] >= targets[r["op"]] else "MISS"
        print(
            f"{r['op']:<6} {r['codec']:<6} {r['kwire_us']:>10} {r['kafka_python_us']:>13} {r['ratio']:>6}x "
            f"{targets[r['op']]:>5}x {ok}"
        )


if __name__ == "__main__":
    main()
