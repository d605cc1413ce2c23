"""Run seeds: one (with a readable trace on failure) or many, fanned out over worker processes.

Invariant: a run is a pure function of (scenario, seed, bug flags); seed ``s`` of a multi-scenario sweep
uses scenario ``names[s % len(names)]`` so any failure replays with ``--scenario NAME --seed s``.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass, field, fields

from kraftd.core.config import BugFlags
from kraftd.sim.controller_scenarios import CONTROLLER_SCENARIOS, SCALE_SCENARIOS
from kraftd.sim.harness import Harness
from kraftd.sim.scenarios import SCENARIOS

ALL_SCENARIOS = {
    **SCENARIOS,
    **CONTROLLER_SCENARIOS,
    **SCALE_SCENARIOS,
}  # sweeps default to the Raft set; replay knows both


@dataclass(frozen=True, slots=True)
class SeedResult:
    scenario: str
    seed: int
    ok: bool
    error: str = ""
    trace: tuple[str, ...] = field(default=())
    events: int = 0
    virtual_ms: int = 0
    commit_wait_ms: int = 0
    bugs: tuple[str, ...] = ()

    def report(self) -> str:
        if self.ok:
            head = f"ok   {self.scenario} seed={self.seed} events={self.events} virtual={self.virtual_ms}ms"
            if not self.trace:
                return head
            return "\n".join([head, f"  last {len(self.trace)} events:", *(f"    {t}" for t in self.trace)])
        lines = [
            f"FAIL {self.scenario} seed={self.seed}: {self.error}",
            f"  replay: python -m kraftd.sim --scenario {self.scenario} --seed {self.seed}"
            + "".join(f" --bug {b}" for b in self.bugs),
            "  last events:",
        ]
        lines += [f"    {t}" for t in self.trace]
        return "\n".join(lines)


def run_seed(
    scenario: str, seed: int, bugs: BugFlags | None = None, trace_len: int = 120, keep_trace: bool = False
) -> SeedResult:
    """One seed; the trace (last ``trace_len`` events) is kept on failure, and on success with keep_trace."""
    h = Harness(seed, bugs, trace_len)
    planted = tuple(f.name for f in fields(BugFlags) if getattr(h.bugs, f.name))
    try:
        ALL_SCENARIOS[scenario](h)
    except Exception as exc:  # any escape is a failed seed, reported with its trace
        c = h.cluster
        trace = tuple(c.trace) if c else ()
        return SeedResult(
            scenario,
            seed,
            False,
            f"{type(exc).__name__}: {exc}",
            trace,
            c.events if c else 0,
            c.now if c else 0,
            bugs=planted,
        )
    c = h.c
    return SeedResult(
        scenario,
        seed,
        True,
        trace=tuple(c.trace) if keep_trace else (),
        events=c.events,
        virtual_ms=c.now,
        commit_wait_ms=h.max_commit_wait_ms,
        bugs=planted,
    )


def pick(seed: int, names: list[str]) -> str:
    return names[seed % len(names)]


def _job(args: tuple[str, int, BugFlags]) -> SeedResult:
    return run_seed(*args)


@dataclass(frozen=True, slots=True)
class Sweep:
    results: list[SeedResult]
    seconds: float

    @property
    def failures(self) -> list[SeedResult]:
        return [r for r in self.results if not r.ok]

    @property
    def slowest_commit_ms(self) -> int:
        return max((r.commit_wait_ms for r in self.results), default=0)

    @property
    def seeds_per_second(self) -> float:
        return len(self.results) / self.seconds if self.seconds else 0.0


def run_many(
    seeds: range,
    names: list[str] | None = None,
    workers: int = 1,
    bugs: BugFlags | None = None,
    stop_on_failure: bool = False,
) -> Sweep:
    names = names or sorted(SCENARIOS)
    jobs = [(pick(s, names), s, bugs or BugFlags()) for s in seeds]
    start = time.perf_counter()
    results: list[SeedResult] = []
    if workers <= 1:
        for j in jobs:
            r = _job(j)
            results.append(r)
            if stop_on_failure and not r.ok:
                break
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for r in pool.imap_unordered(_job, jobs, chunksize=4):
                results.append(r)
                if stop_on_failure and not r.ok:
                    pool.terminate()
                    break
    return Sweep(results, time.perf_counter() - start)
