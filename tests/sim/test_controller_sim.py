"""The controller in the deterministic simulator (issue 9): the metadata state machine on every node, brokers as
clients, faults everywhere; invariants (21)-(28) of kraftd.sim.controller_invariants after every event.

Budget: KRAFTD_SIM_CONTROLLER_SEEDS seeds (default 400) round-robin over the controller scenarios on
KRAFTD_SIM_WORKERS processes; each planted controller bug must be caught within the same budget, by the invariant
that names it, with a replay command that reproduces it."""

from __future__ import annotations

import os

import pytest

from kraftd.core.config import BugFlags
from kraftd.sim.__main__ import main
from kraftd.sim.controller_scenarios import CONTROLLER_SCENARIOS
from kraftd.sim.harness import Harness
from kraftd.sim.runner import run_many, run_seed

SEEDS = int(os.environ.get("KRAFTD_SIM_CONTROLLER_SEEDS", "400"))
WORKERS = int(os.environ.get("KRAFTD_SIM_WORKERS", "2"))
NAMES = sorted(CONTROLLER_SCENARIOS)

EXPECTED = {
    # a new leader stalls its loop copying the image: leaders come and go (issue 22)
    "copy_image_on_activation": ("lost its leader", "never settled under a stable controller"),
    "fence_keeps_leader": ("invariant (22)", "invariant (23)"),  # a fenced leader, outside the shrunk ISR
    "isr_admits_fenced": ("invariant (27)",),
    "reuse_broker_epoch": ("invariant (26)",),
    "snapshot_missing_record": ("invariant (28)",),  # an image snapshot that lost a record
}


def test_controller_seed_budget() -> None:
    sweep = run_many(range(SEEDS), NAMES, workers=WORKERS)
    assert len(sweep.results) == SEEDS
    print(f"\n{SEEDS} controller seeds in {sweep.seconds:.1f}s ({sweep.seeds_per_second:.1f}/s)")
    assert not sweep.failures, "\n\n".join(r.report() for r in sweep.failures[:3])


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_planted_controller_bug_is_caught_and_replays(bug: str) -> None:
    bugs = BugFlags(**{bug: True})
    sweep = run_many(range(SEEDS), NAMES, bugs=bugs, stop_on_failure=True)
    assert sweep.failures, f"{bug} survived {SEEDS} controller seeds"
    first = min(sweep.failures, key=lambda r: r.seed)
    assert any(e in first.error for e in EXPECTED[bug]), first.report()
    report = first.report()
    command = f"python -m kraftd.sim --scenario {first.scenario} --seed {first.seed} --bug {bug}"
    assert command in report and first.trace, report
    again = run_seed(first.scenario, first.seed, bugs)  # the replay fails the same way
    assert not again.ok and again.error == first.error
    argv = ["--scenario", first.scenario, "--seed", str(first.seed), "--bug", bug, "--trace-lines", "5"]
    assert main(argv) == 1


def test_the_checks_see_images_snapshots_and_broker_lifecycles() -> None:
    """Not vacuous: nodes' images are compared, image snapshots written, fetched and loaded, brokers fenced."""
    h = Harness(3, trace_len=10**6)
    CONTROLLER_SCENARIOS["controller_snapshots"](h)
    c = h.c
    checker = c.cchecker  # type: ignore[attr-defined]
    assert checker.images_checked > 50 and checker.snapshots_checked > 5
    assert c.snapshot_loads > 0  # type: ignore[attr-defined]
    ref = checker.ref
    assert ref.brokers and ref.topics and any(t.partitions for t in ref.topics.values())
    assert any("fences broker" in t for t in c.trace)
