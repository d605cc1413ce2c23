"""bench/scale.py's bookkeeping: the swarm's own memory beside the leader's, and a point stopped by SIGTERM (a quiet
run's ``timeout``) still reports what it measured."""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import scale
from tools.swarm.trace import LoopLag


class FakeCluster:
    """A leader that is this process (kraftd kind, no log: no loop stall logged)."""

    kind = "kraftd"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        me = SimpleNamespace(
            proc=SimpleNamespace(pid=os.getpid()),
            node_id=1,
            log_file=Path("/nonexistent"),
            alive=lambda: True,
        )
        self.q = SimpleNamespace(node=lambda node_id: me, nodes=[me])
        self.swarm = SimpleNamespace(
            disconnects=Counter({"raft-client: request timeout": 3}),
            mistaken_fences=lambda: [],
            loop_lag=LoopLag(),
            replay=SimpleNamespace(slow=[]),
        )
        self.closed = False

    def quorum(self, timeout_ms: int = 1000) -> Any:
        return SimpleNamespace(leader_id=1)

    def close(self) -> None:
        self.closed = True
        raise TimeoutError("the swarm did not close in time")  # a loaded loop: the point is still reported


def test_memory_reports_the_swarms_rss_and_both_peaks() -> None:
    got = scale.memory(FakeCluster())  # type: ignore[arg-type]
    assert got["swarm_rss_mib"] > 10 and got["swarm_peak_mib"] >= got["swarm_rss_mib"]
    assert got["leader_peak_mib"] >= got["leader_rss_mib"] > 10 and got["controllers_peak_mib"] > 10


def test_a_point_stopped_by_sigterm_keeps_what_it_measured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def steps(c: Any, n: int, p: int, args: argparse.Namespace, out: dict[str, Any]) -> None:
        out["registered_s"] = 1.5
        scale.progress(out, "registered", c.swarm)
        c.swarm.disconnects["raft-client: request timeout"] += 2
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        out["never"] = True

    clusters: list[FakeCluster] = []
    monkeypatch.setattr(scale, "SwarmCluster", lambda *a, **k: clusters.append(FakeCluster()) or clusters[-1])
    monkeypatch.setattr(scale, "steps", steps)
    old = signal.signal(signal.SIGTERM, scale.on_sigterm)
    try:
        args = argparse.Namespace(dir=str(tmp_path), kafka_log_level="INFO", keep_logs=False)
        started = time.monotonic()
        out = scale.run_point("kraftd", 3, 100, args)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert time.monotonic() - started < 4
    assert out["error"] == "stopped by SIGTERM" and "never" not in out
    assert out["registered_s"] == 1.5 and "registered" in out["phases_s"] and out["seconds"] < 4
    # each phase's disconnects, and those of the phase the point stopped in
    assert out["disconnects"] == {
        "registered": {"raft-client: request timeout": 3},
        "stopped": {"raft-client: request timeout": 2},
    }
    assert (
        out["memory_at_end"]["swarm_rss_mib"] > 10
        and clusters[0].closed
        and "TimeoutError" in out["close_error"]
    )


def test_controlled_shutdown_is_also_timed_from_the_heartbeat_that_asked_for_it() -> None:
    hb = [
        (10.0, 0.01, 0, 7, 1),  # before the ask: not counted
        (10.5, 0.01, 0, 8, 1),  # another broker
        (11.2, 0.30, 0, 7, 1),  # the WantShutDown heartbeat, 0.2 s after the swarm asked
        (11.55, 0.01, 0, 7, 1),  # Kafka's broker: 50 ms after the first answer
        (13.56, 0.01, 0, 7, 1),  # an interval later: told to shut down
    ]
    got = scale.shutdown_figures(hb, 7, asked=11.0, done=13.6)
    assert got == {"from_want_shut_down_s": 2.4, "heartbeats": 3}
    assert scale.shutdown_figures(hb, 9, asked=11.0, done=13.6) == {
        "from_want_shut_down_s": None,
        "heartbeats": 0,
    }


def test_broker_failure_is_also_timed_from_the_session_start() -> None:
    hb = [
        (100.0, 0.01, 0, 7, 1),
        (102.0, 0.01, 0, 7, 1),  # the last one answered: the session starts here
        (103.0, 0.01, 0, 8, 1),  # another broker
        (103.5, 5.0, -1, 7, 1),  # not answered (the kill closed it)
        (105.0, 0.01, 0, 7, 1),  # sent after the kill: impossible, ignored
    ]
    got = scale.failure_figures(hb, 7, killed=103.6, done=111.3, fenced=111.2, session_s=9.0)
    assert got == {
        "from_session_start_s": 9.3,
        "fenced_after_expiry_s": 0.2,
        "kill_after_session_start_s": 1.6,
    }
    assert scale.failure_figures(hb, 9, 103.6, 111.3, 111.2, 9.0) == {"from_session_start_s": None}
    # the table shows both figures for each kind
    text = scale.table([{"kind": "kraftd", "brokers": 3, "partitions": 1, "broker_failure": got}])
    assert "broker failure from session start s" in text and "fenced after expiry" in text


def test_keep_logs_copies_the_controller_logs_and_not_the_metadata_segments(tmp_path: Path) -> None:
    root = tmp_path / "scale-kraftd-3-abc"
    (root / "data-1" / "__cluster_metadata-0").mkdir(parents=True)
    (root / "node-1-kraftd.log").write_text("fencing broker 7")
    (root / "data-1" / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"x" * 10)
    kept = scale.keep_logs(root)
    assert kept == tmp_path / "scale-kraftd-3-abc-logs"
    assert sorted(p.name for p in kept.iterdir()) == ["node-1-kraftd.log"]
    assert (kept / "node-1-kraftd.log").read_text() == "fencing broker 7"


def test_each_kill_waits_the_same_random_part_of_the_idle_cadence_on_both_kinds() -> None:
    """Killed at once after the phase before, kraftd's leader died right after its own last write (its followers'
    fetch timers had just been re-armed) and Kafka's did not: each kill now waits 1-1.5 s, the same for both kinds."""
    delays = [scale.kill_delay_s(k) for k in range(5)]
    assert delays == [scale.kill_delay_s(k) for k in range(5)]  # both kinds get this sequence
    assert all(1.0 <= d < 1.5 for d in delays) and len(set(delays)) == 5
    kills = [
        {
            "new_leader_s": 1.9,
            "all_heartbeats_answered_s": 3.4,
            "observers_learned_p50_s": 2.0,
            "observers_learned_max_s": 2.6,
            "elections": 1,
            "unanswered": 0,
            "mistaken_fences": 0,
        },
        {
            "new_leader_s": 1.7,
            "all_heartbeats_answered_s": 3.3,
            "observers_learned_p50_s": 1.8,
            "observers_learned_max_s": 2.5,
            "elections": 1,
            "unanswered": 0,
            "mistaken_fences": 0,
        },
        {
            "new_leader_s": 2.1,
            "all_heartbeats_answered_s": 3.6,
            "observers_learned_p50_s": 2.2,
            "observers_learned_max_s": 2.9,
            "elections": 2,
            "unanswered": 0,
            "mistaken_fences": 0,
        },
    ]
    got = scale.failover_summary(kills)
    assert got["observers_learned_p50_s"] == 2.0 and got["observers_learned_max_s_max"] == 2.9
    text = scale.table([{"kind": "kraftd", "brokers": 3, "partitions": 1, "controller_failover": got}])
    assert "observers knew the new leader last s" in text
