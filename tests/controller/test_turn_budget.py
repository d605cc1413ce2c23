"""One slicing budget a loop turn (kraftd.shell.controller.glue contract 9, issue 24): the glue's computing
operations and its replay drain share ``SLICE_S`` a turn instead of each taking ``SLICE_S``. Counted on a fake
clock: every step of work advances it by a fixed amount, and a spinning task counts the steps of each turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator

import pytest

from kraftd.controller.machine import MetadataController
from kraftd.shell.controller import glue as glue_mod
from tests.helpers.controller import cluster

STEP_S = 0.005  # fake time one step of work takes
SLICE_STEPS = 4  # SLICE_S / STEP_S


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _glue() -> glue_mod.ControllerGlue:
    m = MetadataController(1, [])
    m.committed, _ = cluster(3)
    return glue_mod.ControllerGlue(object(), m)  # type: ignore[arg-type]


def test_two_operations_computing_in_the_same_turns_share_one_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(time, "perf_counter", clock)
    monkeypatch.setattr(glue_mod, "SLICE_S", SLICE_STEPS * STEP_S)
    glue = _glue()
    turn = [0]
    steps_by_turn: dict[int, int] = {}

    def work(n: int) -> Generator[None, None, int]:
        for i in range(n):
            steps_by_turn[turn[0]] = steps_by_turn.get(turn[0], 0) + 1
            clock.now += STEP_S
            if i < n - 1:
                yield
        return n

    async def spin() -> None:
        while True:
            turn[0] += 1
            await asyncio.sleep(0)

    async def run() -> tuple[int, int]:
        spinner = asyncio.create_task(spin())
        await asyncio.sleep(0)
        a, b = await asyncio.gather(glue.compute(work(40)), glue.compute(work(40)))
        spinner.cancel()
        return a, b

    assert asyncio.run(run()) == (40, 40)
    assert sum(steps_by_turn.values()) == 80
    # Each turn: the budget's SLICE_STEPS steps, plus at most one step of the other operation (its minimum), not
    # SLICE_STEPS each.
    assert max(steps_by_turn.values()) <= SLICE_STEPS + 1, steps_by_turn
    assert len(steps_by_turn) >= 80 // (SLICE_STEPS + 1)


def test_the_budget_opens_once_a_turn_and_a_new_turn_opens_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(time, "perf_counter", clock)
    budget = glue_mod.TurnBudget()
    assert budget.until() == clock.now + glue_mod.SLICE_S  # no loop: a slice of its own

    async def run() -> tuple[float, float, float]:
        first = budget.until()
        clock.now += 1
        same_turn = budget.until()
        await asyncio.sleep(0)
        return first, same_turn, budget.until()

    first, same_turn, next_turn = asyncio.run(run())
    assert same_turn == first and next_turn == first + 1
