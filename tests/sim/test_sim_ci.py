"""The CI seed budget: KRAFTD_SIM_SEEDS seeds (default 6000) round-robin over every scenario, on
KRAFTD_SIM_WORKERS processes (default 2), split into KRAFTD_SIM_CHUNKS parametrized tests (default 12) so
pytest shows progress during the sweep. Every invariant is checked after every event; every scenario ends
with a liveness check. Prints seeds/second per chunk."""

from __future__ import annotations

import os

import pytest

from kraftd.sim.runner import pick, run_many
from kraftd.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("KRAFTD_SIM_SEEDS", "6000"))
WORKERS = int(os.environ.get("KRAFTD_SIM_WORKERS", "2"))
CHUNKS = max(1, min(SEEDS, int(os.environ.get("KRAFTD_SIM_CHUNKS", "12"))))


def _chunk(k: int) -> range:
    return range(k * SEEDS // CHUNKS, (k + 1) * SEEDS // CHUNKS)


def test_chunks_cover_the_budget_and_every_scenario() -> None:
    seeds = [s for k in range(CHUNKS) for s in _chunk(k)]
    assert seeds == list(range(SEEDS))
    names = sorted(SCENARIOS)
    assert {pick(s, names) for s in seeds} == set(SCENARIOS) or SEEDS < len(SCENARIOS)


def test_sweep_runs_every_quorum_size_from_one_to_five_voters() -> None:
    sizes = {int(n.removeprefix("steady_leader_").removesuffix("v")) for n in SCENARIOS if "steady" in n}
    assert sizes == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("chunk", range(CHUNKS), ids=lambda k: f"seeds{_chunk(k).start}-{_chunk(k).stop - 1}")
def test_ci_seed_budget(chunk: int) -> None:
    seeds = _chunk(chunk)
    sweep = run_many(seeds, workers=WORKERS)
    assert len(sweep.results) == len(seeds)
    print(
        f"\n{len(seeds)} seeds in {sweep.seconds:.1f}s: {sweep.seeds_per_second:.2f} seeds/s on {WORKERS} workers"
    )
    failures = sweep.failures
    assert not failures, "\n\n".join(r.report() for r in failures[:3])
