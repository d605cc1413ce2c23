"""``python -m kraftd.sim``: replay one seed, or sweep many over worker processes.

python -m kraftd.sim --scenario zombie_leader --seed 42       # replay one seed and print its trace
python -m kraftd.sim --seeds 0-9999 --workers 2               # every scenario, round robin
python -m kraftd.sim --seeds 0-499 --bug no_check_quorum      # show a planted bug being caught
python -m kraftd.sim --scenario controller_chaos --seeds 0-99  # the controller on every node, brokers as clients
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from kraftd.core.config import BugFlags
from kraftd.sim.harness import LIVENESS_BOUND_MS
from kraftd.sim.runner import ALL_SCENARIOS, run_many, run_seed


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kraftd.sim", description=__doc__.splitlines()[0])
    p.add_argument("--scenario", choices=sorted(ALL_SCENARIOS), action="append")
    p.add_argument("--seed", type=int)
    p.add_argument("--seeds", type=_range, default=range(0, 100))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument(
        "--bug",
        choices=[f.name for f in fields(BugFlags)],  # every planted bug, Raft and controller alike
    )
    p.add_argument(
        "--verbose", action="store_true", help="sweeps: print every seed's line, not only failures"
    )
    p.add_argument(
        "--trace-lines",
        type=int,
        default=400,
        help="replay: how many of the last events to print (default 400)",
    )
    args = p.parse_args(argv)
    bugs = BugFlags(**{args.bug: True}) if args.bug else BugFlags()
    if args.seed is not None:
        name = (args.scenario or ["chaos"])[0]
        r = run_seed(name, args.seed, bugs, trace_len=max(1, args.trace_lines), keep_trace=True)
        print(r.report())
        return 0 if r.ok else 1
    sweep = run_many(args.seeds, args.scenario, args.workers, bugs)
    for r in sorted(sweep.results, key=lambda r: r.seed):
        if args.verbose or not r.ok:
            print(r.report())
    n, bad = len(sweep.results), len(sweep.failures)
    print(
        f"{n} seeds, {bad} failed, {sweep.seconds:.1f}s, {sweep.seeds_per_second:.2f} seeds/s, "
        f"slowest liveness check {sweep.slowest_commit_ms} ms (bound {LIVENESS_BOUND_MS} ms)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
