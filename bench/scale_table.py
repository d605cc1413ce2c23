"""bench/scale.py's table: each (N, P) point's figures for both kinds beside their kraftd/Kafka ratio, then how
each cost grows with N and with P (bench/scale_growth.py).

Points from several runs or windows make one table: ``.venv/bin/python bench/scale_table.py a.json b.json ...``
(each file bench/scale.py's ``--json`` output, or its stderr: the points a run finished before it was stopped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_growth import growth, load, pick, series, values  # noqa: E402

PHASES = ("create_topics", "steady", "controlled_shutdown", "broker_failure", "controller_failover")
# (label, path) of the numbers compared between the kinds
ROWS = [
    ("registration s", ("registered_s",)),
    ("CreateTopics partitions/s", ("create_topics", "per_s")),
    ("propagation from commit p50 ms", ("propagation_ms", "from_commit_p50")),
    ("propagation from commit p99 ms", ("propagation_ms", "from_commit_p99")),
    ("propagation from send p50 ms", ("propagation_ms", "p50")),
    ("propagation from send p99 ms", ("propagation_ms", "p99")),
    ("propagation send-to-commit ms", ("propagation_ms", "send_to_commit_mean")),
    ("propagation first-to-last ms", ("propagation_ms", "first_to_last_mean")),
    ("heartbeat p50 ms", ("steady", "p50_ms")),
    ("heartbeat p99 ms", ("steady", "p99_ms")),
    ("heartbeat max ms", ("steady", "max_ms")),
    ("heartbeat errors", ("steady", "errors")),
    ("leader CPU s / 1000 heartbeats", ("steady", "leader_cpu_s_per_1000_heartbeats")),
    ("swarm CPU % (steady)", ("steady", "swarm_cpu_pct")),
    ("swarm CPU % (create)", ("create_topics", "swarm_cpu_pct")),
    ("leader RSS MiB (steady)", ("memory_steady", "leader_rss_mib")),
    ("controllers' peak RSS MiB (end)", ("memory_at_end", "controllers_peak_mib")),
    ("swarm peak RSS MiB (end)", ("memory_at_end", "swarm_peak_mib")),
    ("Kafka heap used MiB (steady)", ("memory_steady", "heap_used_mib")),
    ("controlled shutdown s", ("controlled_shutdown", "seconds")),
    ("controlled shutdown from WantShutDown s", ("controlled_shutdown", "from_want_shut_down_s")),
    ("controlled shutdown heartbeats", ("controlled_shutdown", "heartbeats")),
    ("broker failure s", ("broker_failure", "seconds")),
    ("broker failure from session start s", ("broker_failure", "from_session_start_s")),
    ("broker failure: fenced after expiry s", ("broker_failure", "fenced_after_expiry_s")),
    ("failover: new leader s", ("controller_failover", "new_leader_s")),
    ("failover: heartbeats answered s", ("controller_failover", "all_heartbeats_answered_s")),
    ("failover: new leader s (max)", ("controller_failover", "new_leader_s_max")),
    ("failover: answered s (max)", ("controller_failover", "all_heartbeats_answered_s_max")),
    ("failover: observers knew the new leader p50 s", ("controller_failover", "observers_learned_p50_s")),
    ("failover: observers knew the new leader last s", ("controller_failover", "observers_learned_max_s")),
    ("failover: elections", ("controller_failover", "elections")),
    ("mistaken fences", ("mistaken_fences",)),
    *((f"loop stall ms: {k}", ("loop_stall_ms", k)) for k in PHASES),
    *((f"loop stall CPU ms: {k}", ("loop_stall_cpu_ms", k)) for k in PHASES),
]


def table(points: list[dict[str, Any]]) -> str:
    lines = []
    for n, p in sorted({(pt["brokers"], pt["partitions"]) for pt in points}):
        by_kind = {pt["kind"]: pt for pt in points if (pt["brokers"], pt["partitions"]) == (n, p)}
        k, j = by_kind.get("kraftd", {}), by_kind.get("kafka", {})
        lines.append(f"N={n} P={p} (load {k.get('load_before', 0):.1f} / {j.get('load_before', 0):.1f})")
        for label, path in ROWS:
            a, b = pick(k, path), pick(j, path)
            ratio = (
                f"{a / b:6.2f}"
                if isinstance(a, int | float) and isinstance(b, int | float) and b
                else "     -"
            )
            lines.append(f"  {label:34} kraftd {a!s:>10}  kafka {b!s:>10}  ratio {ratio}")
        for kind, pt in by_kind.items():
            for phase, counts in pt.get("disconnects", {}).items():  # bench/scale.py: closed, by reason
                lines.append(f"  {kind} disconnects, {phase}: {counts or 'none'}")
            if "error" in pt:
                lines.append(f"  {kind} stopped early: {pt['error']}")
    vals = values(points)
    if any(series(vals, kind, along) for kind in {k for k, _, _ in vals} for along in ("N", "P")):
        lines += ["", growth(points)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description="bench/scale.py points from several runs as one table (ratios, growth)"
    )
    ap.add_argument("files", nargs="+", help="bench/scale.py --json output, or the stderr of a run")
    ap.add_argument("--json", action="store_true", help="print the points read, as one JSON list")
    args = ap.parse_args()
    points = load(args.files)
    print(json.dumps(points) if args.json else table(points))


if __name__ == "__main__":
    main()
