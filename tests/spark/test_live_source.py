"""The live ``kraft`` stream over a real 3-node kraftd quorum: a leader kill and a query restart lose nothing and
duplicate nothing (offsets 0..N exactly once, each acknowledged record with its value)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.spark import max_offset as _max_offset
from tests.helpers.spark import wait_until as _wait
from tools.local_quorum import LocalQuorum

pytestmark = pytest.mark.slow


def _start(spark: Any, bootstrap: str, out: Path, checkpoint: Path) -> Any:
    stream = spark.readStream.format("kraft").option("bootstrap.controller", bootstrap).load()
    return (
        stream.select("offset", "file_kind", "epoch", "node", "value", "error")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def _acks(q: LocalQuorum) -> dict[int, str]:
    acked: dict[int, str] = {}
    for node_id in q.node_ids():
        path = q.ack_file(node_id)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            first, last, prefix, seq, *_ = line.split()
            for i in range(int(last) - int(first) + 1):
                acked[int(first) + i] = f"{prefix}-{int(seq) + i}"
    return acked


def test_stream_survives_leader_kill_and_query_restart(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    q = LocalQuorum(tmp_path / "q", 3, load=(1, 40, 1))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = None
    try:
        q.start_all()
        first = q.wait_leader(timeout=60)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in q.ports)
        query = _start(spark, bootstrap, out, checkpoint)
        _wait("the first rows", lambda: _max_offset(spark, out) >= 20, 120)
        q.kill(first.leader_id, signal.SIGKILL)
        second = q.wait_leader(timeout=60, exclude=first.leader_id)
        assert second.leader_epoch > first.leader_epoch
        _, info = q.describe(hosts=[i for i in q.node_ids() if i != first.leader_id])
        target = info.high_watermark + 10
        query.stop()  # the restart: a new query on the same checkpoint
        query = _start(spark, bootstrap, out, checkpoint)
        _wait(f"offset {target}", lambda: _max_offset(spark, out) >= target, 180)
        query.stop()
        query = None
    finally:
        if query is not None:
            query.stop()
        q.stop_all()
    rows = spark.read.parquet(str(out)).collect()
    offsets = sorted(r.offset for r in rows)
    assert offsets == list(range(len(offsets))), "every offset from 0 exactly once"
    assert {r.file_kind for r in rows} == {"log"}
    epochs = {r.epoch for r in rows}
    assert first.leader_epoch in epochs and second.leader_epoch in epochs
    assert {r.node for r in rows} >= {first.leader_id, second.leader_id}
    by_offset = {r.offset: r for r in rows}
    acked = {o: rid for o, rid in _acks(q).items() if o <= offsets[-1]}
    assert len(acked) > 20
    for offset, rid in acked.items():
        assert bytes(by_offset[offset].value).startswith(rid.encode()), offset
