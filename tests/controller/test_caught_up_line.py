"""A controller that starts logs Kafka's MetadataLoader line once its replay has reached the high watermark the
quorum gave it (kraftd.shell.controller.glue contract 1): the line a restarted controller's readiness is read from
(kraftd.testing.swarm waits for it before killing again; a controller elected while still replaying 200k records
answered NOT_CONTROLLER for 20 s at 1M partitions)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from kraftd.controller.machine import MetadataController
from kraftd.shell.controller import glue as glue_mod
from tests.controller.test_incremental_replay import RECORDS, _batches

LINE = "The loader finished catching up to the current high water mark of"


def test_the_caught_up_line_comes_once_after_the_whole_committed_backlog_is_replayed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)  # one REPLAY_STEP a loop turn
    machine = MetadataController(1, [])
    node = SimpleNamespace(config=SimpleNamespace(node_id=1))
    glue = glue_mod.ControllerGlue(node, machine)  # type: ignore[arg-type]
    batches = _batches(RECORDS, [30])
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
