"""One commit at one in flight, split by stage across the three processes (issue 25).

Run a quorum with ``KRAFTD_STAGE_TRACE=<dir>`` (kwire.stagetrace), e.g.

    KRAFTD_STAGE_TRACE=/tmp/tr .venv/bin/python bench/quorum.py --seconds 4 --skip throughput,failover,handoff
    .venv/bin/python bench/stages.py /tmp/tr [--json]

A stage whose name ends in ``?`` counts only when it comes before the next stage (else it shows 0): the
Fetch answers are written inside the step since issue 25, so the step now ends after them.
The leader is the process with ``append`` marks, followers the ones with ``fsync.begin``. Each cycle runs from
an ``append`` to the next ``committed`` on the leader; within it the chain below is found mark by mark (each the
first of its name after the previous one), for the follower whose next Fetch went out first. Printed: the median
and p90 of every step of the chain (us), and the leader's own flush beside it.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import sys
from pathlib import Path

# (process, stage prefix, label)
CHAIN = [
    ("L", "step.Tick", "L wake-up: append -> driver step"),
    ("L", "step.end?", "L step ends (before only: core, log write, flush start)"),
    ("L", "ask.resumed?", "L Fetch handler resumes (before only)"),
    ("L", "srv.write", "L Fetch answer encoded, send starts"),
    ("F", "cli.read", "loopback L -> F (incl. F scheduled)"),
    ("F", "cli.decoded.1", "F parse (decode Fetch response)"),
    ("F", "step.ResponseReceived", "F route: future -> _send -> inbox -> driver"),
    ("F", "fsync.begin", "F step (core + log write)"),
    ("F", "fsync.end", "F fsync"),
    ("F", "step.LogFlushed", "F LogFlushed -> next step"),
    ("F", "step.end?", "F step (LogFlushed) ends (before only)"),
    ("F", "cli.write.1", "F next Fetch encoded, send starts"),
    ("L", "srv.read", "loopback F -> L (incl. L scheduled)"),
    ("L", "srv.parsed.1", "L parse"),
    ("L", "step.RequestReceived", "L route: task -> ask_core -> inbox -> driver"),
    ("L", "committed", "L step + commit wake-up (HWM, future, append resumes)"),
]
FOLLOWER_SENT = 11  # index of the follower's next Fetch in CHAIN
LEADER_FLUSH = [
    ("lflush.begin", "L flush: append -> handed to its thread"),
    ("lflush.started?", "L flush: thread wakes, fsync starts"),
    ("lflush.synced", "L fsync (thread)"),
    ("lflush.resumed", "L flush: thread -> loop"),
    ("step.LogFlushed", "L flush: LogFlushed -> step"),
]


def load(directory: Path) -> dict[int, list[tuple[int, str]]]:
    out: dict[int, list[tuple[int, str]]] = {}
    for f in directory.glob("*.trace"):
        marks = []
        for line in f.read_text().splitlines():
            ns, _, stage = line.partition(" ")
            marks.append((int(ns), stage))
        out[int(f.stem)] = sorted(marks)
    return out


def first_after(
    marks: list[tuple[int, str]], times: list[int], t: int, prefix: str, until: int
) -> int | None:
    i = bisect.bisect_left(times, t)
    while i < len(marks) and marks[i][0] <= until:
        if marks[i][1].startswith(prefix):
            return marks[i][0]
        i += 1
    return None


def enriched(
    procs: dict[int, list[tuple[int, str]]], leader: int, windows: list[tuple[int, int]], keep: list[int]
) -> str:
    """Marks seen more often inside the slowest commits' windows than inside every commit's, per process."""
    counts: list[dict[str, int]] = []
    for a, end in windows:
        seen: dict[str, int] = {}
        for pid, marks in procs.items():
            who = "L" if pid == leader else f"F{pid}"
            i = bisect.bisect_left(marks, (a + 1, ""))
            while i < len(marks) and marks[i][0] < end:
                name = f"{who} {marks[i][1]}"
                seen[name] = seen.get(name, 0) + 1
                i += 1
        counts.append(seen)
    names = {n for c in counts for n in c}

    def mean(rows: list[int], n: str) -> float:
        return sum(counts[k].get(n, 0) for k in rows) / max(1, len(rows))

    every = list(range(len(windows)))
    diff = sorted(((mean(keep, n) - mean(every, n), n) for n in names), reverse=True)
    lines = [f"marks per commit, the slowest {len(keep)} vs all {len(every)} (most enriched first):"]
    lines += [f"  {n}: {mean(keep, n):.2f} vs {mean(every, n):.2f}" for d, n in diff[:12] if d > 0.05]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description="One commit split by stage, from a KRAFTD_STAGE_TRACE directory."
    )
    ap.add_argument("trace_dir", type=Path, help="the directory KRAFTD_STAGE_TRACE named")
    ap.add_argument("--json", action="store_true", help="print {stage: [p50 us, p90 us]} as one JSON object")
    ap.add_argument(
        "--slowest",
        type=float,
        default=0.0,
        metavar="PCT",
        help="only the slowest PCT%% of the traced commits (append -> committed): where the tail goes",
    )
    args = ap.parse_args()
    procs = load(args.trace_dir)
    if not any(s == "append" for ms in procs.values() for _, s in ms):
        raise SystemExit(f"{args.trace_dir}: no leader trace (no 'append' mark): was KRAFTD_STAGE_TRACE set?")
    # the process with the most appends (one that led only during start-up has a few)
    leader = max(procs, key=lambda p: sum(1 for _, s in procs[p] if s == "append"))
    followers = [p for p, ms in procs.items() if p != leader and any(s == "fsync.begin" for _, s in ms)]
    lm = procs[leader]
    lt = [t for t, _ in lm]
    fms = {p: (procs[p], [t for t, _ in procs[p]]) for p in followers}
    appends = [t for t, s in lm if s == "append"]
    steps: list[list[float]] = [[] for _ in CHAIN]
    flush: list[list[float]] = [[] for _ in LEADER_FLUSH]
    totals = []
    windows: list[tuple[int, int]] = []  # per traced commit, (append, committed) ns
    flushes: list[list[float | None]] = []  # per traced commit, LEADER_FLUSH's stages (None: not found)
    for a in appends[len(appends) // 10 :]:  # skip the warm-up
        end = first_after(lm, lt, a + 1, "committed", a + 50_000_000)
        if end is None:
            continue
        best: list[int] | None = None
        for marks, times in fms.values():
            chain, t = [], a
            for i, (proc, prefix, _) in enumerate(CHAIN):
                src, ts = (lm, lt) if proc == "L" else (marks, times)
                found = first_after(src, ts, t, prefix.rstrip("?"), end)
                if prefix.endswith("?"):
                    nxt = next(j for j in range(i + 1, len(CHAIN)) if not CHAIN[j][1].endswith("?"))
                    nsrc, nts = (lm, lt) if CHAIN[nxt][0] == "L" else (marks, times)
                    limit = first_after(nsrc, nts, t, CHAIN[nxt][1], end)
                    if found is None or limit is None or found > limit:
                        found = t
                if found is None:
                    break
                chain.append(found)
                t = found
            if len(chain) == len(CHAIN) and (best is None or chain[FOLLOWER_SENT] < best[FOLLOWER_SENT]):
                best = chain
        if best is None:
            continue
        prev = a
        for i, t in enumerate(best):
            steps[i].append((t - prev) / 1000)
            prev = t
        totals.append((end - a) / 1000)
        windows.append((a, end))
        t = a
        flush_row: list[float | None] = [None] * len(LEADER_FLUSH)
        for i, (prefix, _) in enumerate(LEADER_FLUSH):
            found = first_after(lm, lt, t, prefix.rstrip("?"), end)
            if found is None and prefix.endswith("?"):  # a trace from before the mark existed
                continue
            if found is None:
                break
            flush_row[i] = (found - t) / 1000
            t = found
        for i, x in enumerate(flush_row):
            if x is not None:
                flush[i].append(x)
        flushes.append(flush_row)
    if args.slowest > 0:  # keep the slowest commits' rows only
        keep = sorted(range(len(totals)), key=totals.__getitem__)[
            -max(1, int(len(totals) * args.slowest / 100)) :
        ]
        print(enriched(procs, leader, windows, keep), file=sys.stderr if args.json else sys.stdout)
        steps = [[xs[k] for k in keep] for xs in steps]
        flush = [[x for k in keep if (x := flushes[k][i]) is not None] for i in range(len(LEADER_FLUSH))]
        totals = [totals[k] for k in keep]

    def row(label: str, xs: list[float]) -> str:
        if not xs:
            return f"| {label} | - | - |"
        xs = sorted(xs)
        return f"| {label} | {statistics.median(xs):.0f} | {xs[int(0.9 * (len(xs) - 1))]:.0f} |"

    if args.json:
        rows = [*zip([c[2] for c in CHAIN], steps, strict=True), ("append -> committed", totals)]
        rows += list(zip([f[1] for f in LEADER_FLUSH], flush, strict=True))

        def pair(xs: list[float]) -> list[float] | None:
            xs = sorted(xs)
            return [statistics.median(xs), xs[int(0.9 * (len(xs) - 1))]] if xs else None

        print(json.dumps({"commits": len(totals), "stages_us": {k: pair(v) for k, v in rows}}))
        return
    print(f"{len(totals)} commits traced")
    print("| stage | p50 us | p90 us |\n| --- | --- | --- |")
    for (_, _, label), xs in zip(CHAIN, steps, strict=True):
        print(row(label, xs))
    print(row("**append -> committed**", totals))
    for (_, label), xs in zip(LEADER_FLUSH, flush, strict=True):
        print(row(label, xs))


if __name__ == "__main__":
    main()
