"""How each cost of bench/scale.py grows with N (brokers, at a fixed P) and with P (partitions, at a fixed N), for
each controller kind (issue 24 §2: "how each cost grows with N and with P"; §3: "cost linear or better in P").

Contracts:
1. Between consecutive points of a series (sorted by x, the other dimension fixed), the log-log exponent
   ``b = log(y2 / y1) / log(x2 / x1)``: 1.0 the cost grew as x (linear), 0 flat, < 1 sub-linear, > 1 super-linear.
2. A value that is missing, not a number (``"<100"``: no loop stall logged) or not positive breaks no series: the
   exponent is taken between the points on either side of it (so b spans a wider step), and a series with fewer
   than two values prints no exponent.
3. Repeated points (the same kind, N and P from several runs or files) are summarised by the median of each row.
4. The verdict for §3: a kind's costs are linear or better in P when every exponent over P, at every N, is at
   most ``LINEAR_BOUND`` (1.1: room for one run's noise); the verdict names the rows and points it rests on.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

LINEAR_BOUND = 1.1
GROWS = 0.25  # an exponent below this is a flat cost with one run's noise: not compared between the kinds
# (label, path) of the costs followed over N and P: times, CPU, memory (a rate's cost is its time)
GROWTH_ROWS: list[tuple[str, tuple[str, ...]]] = [
    ("registration s", ("registered_s",)),
    ("CreateTopics s", ("create_topics", "seconds")),
    ("propagation from commit p50 ms", ("propagation_ms", "from_commit_p50")),
    ("propagation from commit p99 ms", ("propagation_ms", "from_commit_p99")),
    ("heartbeat p50 ms", ("steady", "p50_ms")),
    ("heartbeat p99 ms", ("steady", "p99_ms")),
    ("leader CPU % (steady)", ("steady", "leader_cpu_pct")),
    ("leader CPU s / 1000 heartbeats", ("steady", "leader_cpu_s_per_1000_heartbeats")),
    ("leader RSS MiB (after create)", ("memory_after_create", "leader_rss_mib")),
    ("Kafka heap used MiB (after create)", ("memory_after_create", "heap_used_mib")),
    ("controllers' peak RSS MiB (end)", ("memory_at_end", "controllers_peak_mib")),
    ("controlled shutdown s", ("controlled_shutdown", "seconds")),
    ("broker failure from session start s", ("broker_failure", "from_session_start_s")),
    ("broker failure: fenced after expiry s", ("broker_failure", "fenced_after_expiry_s")),
    ("failover: new leader s", ("controller_failover", "new_leader_s")),
    ("failover: heartbeats answered s", ("controller_failover", "all_heartbeats_answered_s")),
    ("loop stall ms: create_topics", ("loop_stall_ms", "create_topics")),
]


def pick(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def number(v: Any) -> float | None:
    """A positive number, else None (contract 2)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
        return None
    return float(v)


def exponent(x1: float, y1: float, x2: float, y2: float) -> float:
    """Contract 1: b with y ~ x^b between two points."""
    return math.log(y2 / y1) / math.log(x2 / x1)


def load(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Points from bench/scale.py's output files: ``--json``'s ``{"points": [...]}``, one point object, or its
    stderr (``# kind N=.. P=..: {...}`` lines: the points a run finished before its window ended)."""
    points: list[dict[str, Any]] = []
    for path in paths:
        text = Path(path).read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            for line in text.splitlines():
                if line.startswith("# ") and ": {" in line:
                    points.append(json.loads(line[line.index(": {") + 2 :]))
            continue
        points.extend(data["points"] if "points" in data else [data])
    return points


def values(points: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, float | None]]:
    """(kind, N, P) -> row label -> the row's value, the median over repeated points (contract 3)."""
    runs: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for pt in points:
        runs.setdefault((pt["kind"], pt["brokers"], pt["partitions"]), []).append(pt)
    out: dict[tuple[str, int, int], dict[str, float | None]] = {}
    for key, pts in runs.items():
        row: dict[str, float | None] = {}
        for label, path in GROWTH_ROWS:
            nums = [v for v in (number(pick(pt, path)) for pt in pts) if v is not None]
            row[label] = statistics.median(nums) if nums else None
        out[key] = row
    return out


def series(
    vals: dict[tuple[str, int, int], dict[str, float | None]], kind: str, along: str
) -> list[tuple[int, list[int]]]:
    """For ``along`` "N" (P fixed) or "P" (N fixed): (the fixed value, the sorted x values), two x values or more."""
    fixed_at: dict[int, set[int]] = {}
    for k, n, p in vals:
        if k == kind:
            fixed, x = (p, n) if along == "N" else (n, p)
            fixed_at.setdefault(fixed, set()).add(x)
    return [(f, sorted(xs)) for f, xs in sorted(fixed_at.items()) if len(xs) >= 2]


def steps(xs: list[int], ys: list[float | None]) -> list[tuple[int, int, float]]:
    """Contract 2: (x1, x2, b) between consecutive present values."""
    present = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    return [(x1, x2, exponent(x1, y1, x2, y2)) for (x1, y1), (x2, y2) in pairwise(present)]


def short(x: int) -> str:
    """P as 100k or 1M; N (below 10,000) as itself."""
    if x >= 10_000 and x % 1_000_000 == 0:
        return f"{x // 1_000_000}M"
    return f"{x // 1000}k" if x >= 10_000 and x % 1000 == 0 else str(x)


def step_cell(xs: list[int], x1: int, x2: int, b: float) -> str:
    """An exponent; with its span when it skips a missing value (contract 2)."""
    return f"{b:.2f}" if xs.index(x2) == xs.index(x1) + 1 else f"{b:.2f} ({short(x1)}-{short(x2)})"


def key_of(kind: str, along: str, fixed: int, x: int) -> tuple[str, int, int]:
    return (kind, x, fixed) if along == "N" else (kind, fixed, x)


def exponents(points: list[dict[str, Any]]) -> dict[tuple[str, str, int, str], list[tuple[int, int, float]]]:
    """(kind, along, fixed value, row label) -> [(x1, x2, b)]: every series' exponents."""
    vals = values(points)
    out: dict[tuple[str, str, int, str], list[tuple[int, int, float]]] = {}
    for kind in sorted({k for k, _, _ in vals}):
        for along in ("N", "P"):
            for fixed, xs in series(vals, kind, along):
                for label, _ in GROWTH_ROWS:
                    ys = [vals[key_of(kind, along, fixed, x)][label] for x in xs]
                    out[(kind, along, fixed, label)] = steps(xs, ys)
    return out


def verdict(kind: str, exps: dict[tuple[str, str, int, str], list[tuple[int, int, float]]]) -> str:
    """Contract 4."""
    over_p = {key: st for key, st in exps.items() if key[0] == kind and key[1] == "P" and st}
    if not over_p:
        return f"{kind}: no verdict on P (no two P values at one N)"
    spans = sorted(
        {f"N={short(f)} {short(x1)}->{short(x2)}" for (_, _, f, _), st in over_p.items() for x1, x2, _ in st}
    )
    worse = [
        f"{label} b={b:.2f} (N={short(f)}, {short(x1)}->{short(x2)})"
        for (_, _, f, label), st in sorted(over_p.items())
        for x1, x2, b in st
        if b > LINEAR_BOUND
    ]
    rests = f"{len(over_p)} rows on {', '.join(spans)}"
    if worse:
        return f"{kind}: NOT linear or better in P (b > {LINEAR_BOUND}): {'; '.join(worse)} [{rests}]"
    return f"{kind}: linear or better in P (every b <= {LINEAR_BOUND}) [{rests}]"


def growth(points: list[dict[str, Any]]) -> str:
    """The growth tables of every kind, along N and along P, then the §3 verdicts and where kraftd's exponent is
    above Kafka's on the same step where the cost grows at all (b > ``GROWS``, and by more than 0.1)."""
    vals, exps = values(points), exponents(points)
    kinds = sorted({k for k, _, _ in vals})
    lines = ["Growth (b: cost ~ x^b between consecutive points; 1 linear, 0 flat, < 1 sub-linear)"]
    for kind in kinds:
        for along in ("N", "P"):
            for fixed, xs in series(vals, kind, along):
                other = "P" if along == "N" else "N"
                head = "  ".join(f"{short(x):>8}" for x in xs)
                bs = "  ".join(f"{'b ' + short(a) + '-' + short(b):>11}" for a, b in pairwise(xs))
                lines.append(f"{f'{kind}, over {along} at {other}={short(fixed)}:':40}{head}  {bs}")
                for label, _ in GROWTH_ROWS:
                    ys = [vals[key_of(kind, along, fixed, x)][label] for x in xs]
                    if all(y is None for y in ys):
                        continue
                    cells = "  ".join(f"{y:8.4g}" if y is not None else f"{'-':>8}" for y in ys)
                    bcells = "  ".join(
                        f"{step_cell(xs, x1, x2, b):>11}" for x1, x2, b in exps[(kind, along, fixed, label)]
                    )
                    lines.append(f"  {label:38}{cells}  {bcells}")
    lines += [verdict(kind, exps) for kind in kinds]
    if {"kraftd", "kafka"} <= set(kinds):
        lines.append(
            f"kraftd's exponent above Kafka's (same step, kraftd's b > {GROWS} and above Kafka's by > 0.1):"
        )
        worse = [
            f"  {label}, over {along} at {'P' if along == 'N' else 'N'}={short(f)}, {short(x1)}->{short(x2)}: "
            f"kraftd {b:.2f}, kafka {kb:.2f}"
            for (kind, along, f, label), st in sorted(exps.items())
            if kind == "kraftd"
            for x1, x2, b in st
            for kx1, kx2, kb in exps.get(("kafka", along, f, label), [])
            if (kx1, kx2) == (x1, x2) and b > GROWS and b > kb + 0.1
        ]
        lines += worse or ["  none"]
    return "\n".join(lines)
