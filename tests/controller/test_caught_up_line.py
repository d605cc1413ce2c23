"""A controller that starts logs Kafka's MetadataLoader line once its replay has reached the high watermark the
quorum gave it (kraftd.shell.controller.glue contract 1): the line a restarted controller's readiness is read from
(kraftd.testing.swarm waits for it before killing again; a controller elected while still replaying 200k records
answered NOT_CONTROLLER for 20 s at 1M partitions)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from types import SimpleNamespace

import pytest

from generated.feature_level_record import FeatureLevelRecord
from generated.topic_record import TopicRecord
from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch
from kraftd.shell.controller import glue as glue_mod
from kwire.metadata_frame import encode_record
from kwire.records import build_data_batch


def _batches(n: int, size: int) -> list[LogBatch]:
    records = [FeatureLevelRecord(name="metadata.version", feature_level=21)]
    records += [TopicRecord(name=f"t{i}", topic_id=uuid.UUID(int=i + 1)) for i in range(n - 1)]
    out = []
    for offset in range(0, n, size):
        values = [encode_record(r) for r in records[offset : offset + size]]
        data = build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=0)
        out.append(LogBatch(offset, offset + len(values) - 1, 1, data))
    return out


LINE = "The loader finished catching up to the current high water mark of"


def test_the_caught_up_line_comes_once_after_the_whole_committed_backlog_is_replayed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)  # one REPLAY_STEP a loop turn
    machine = MetadataController(1, [])
    node = SimpleNamespace(config=SimpleNamespace(node_id=1))
    glue = glue_mod.ControllerGlue(node, machine)  # type: ignore[arg-type]
    batches = _batches(600, 30)
    end = batches[-1].next_offset
    seen: list[tuple[int, int]] = []  # (replayed end, lines) at each turn

    async def run() -> None:
        glue._drain()  # the loop's first turns before any commit: no high watermark from the quorum yet
        await asyncio.sleep(0)
        assert LINE not in caplog.text
        glue.handle_commit(tuple(batches), end)
        while machine.replay_pending:
            seen.append((machine.replayed_end, caplog.text.count(LINE)))
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        glue.handle_commit((), end)  # later commits: no second line
        await asyncio.sleep(0)

    with caplog.at_level(logging.INFO, logger="kraftd.controller"):
        asyncio.run(run())
    assert len(seen) > 1  # the backlog took several turns
    assert all(lines == 0 for replayed, lines in seen if replayed < end)
    assert caplog.text.count(LINE) == 1
    assert f"{LINE} {end} " in caplog.text
