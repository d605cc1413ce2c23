"""kraftd.shell.observe.observer on a core driven directly: the log lines an operator relies on (role transitions with
their reason, truncation) and the windowed measures behind the Prometheus gauges."""

from __future__ import annotations

import logging
import random

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.batches import data_batch
from kraftd.core.events import Event, LogFlushed, RequestReceived, ResponseReceived, Tick
from kraftd.core.log import OffsetAndEpoch
from kraftd.shell.observe.logging_setup import RateLimiter
from kraftd.shell.observe.observer import NodeObserver, Window
from kwire.errors import ErrorCode


def drive(obs: NodeObserver, event: Event) -> list[fx.Effect]:
    before = obs.snapshot()
    out = obs.core.step(event)
    obs.step(before, event, out)
    return out


def fetch_of(out: list[fx.Effect]) -> fx.SendRequest:
    (req,) = [e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.FetchRequest)]
    return req


def test_follower_logs_its_transitions_and_a_truncation(caplog: pytest.LogCaptureFixture) -> None:
    core = RaftNode(
        local=ReplicaKey(2),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
    )
    obs = NodeObserver(core)
    caplog.set_level(logging.INFO, logger="kraftd.raft")
    out = drive(obs, RequestReceived(0, 1, m.begin_quorum_request("c", ReplicaKey(2), 1, 1)))
    batch = data_batch(0, 1, [b"a", b"b"], 0)
    resp = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 1, 1, 0, [batch])
    drive(obs, ResponseReceived(1, 1, fetch_of(out).request_id, resp))
    out = drive(obs, LogFlushed(2, 2))
    assert obs.measures.fetch_records.rate() > 0 and obs.measures.append_records.rate() == 0
    out = drive(obs, RequestReceived(3, 2, m.begin_quorum_request("c", ReplicaKey(2), 3, 2)))
    diverged = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 3, 2, 0, None, OffsetAndEpoch(0, 1))
    out = drive(obs, ResponseReceived(4, 3, fetch_of(out).request_id, diverged))
    assert any(isinstance(e, fx.TruncateLog) for e in out)
    text = caplog.text
    assert "node 2: unattached in epoch 0 -> follower in epoch 1: node 1 leads epoch 1" in text
    assert (
        "follower in epoch 1 -> follower in epoch 2: node 3 leads epoch 2 (BeginQuorumEpochRequest)" in text
    )
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "node 2: truncating the log to offset 0 (it diverged from leader 3 in epoch 2)"
    ]


@pytest.mark.parametrize("late", ["tick", "observer fetch"])
def test_a_fetch_timeout_names_its_reason_and_starts_a_pre_vote(
    caplog: pytest.LogCaptureFixture, late: str
) -> None:
    """Kafka's FollowerState: a follower whose fetch timer expires becomes a (pre-vote) candidate. The timer is
    polled after every event: when an observer's Fetch after the deadline is the step that notices it, the Fetch is
    not the reason (the log said ``prospective in epoch 1: FetchRequest`` in session 18)."""
    core = RaftNode(
        local=ReplicaKey(2),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
    )
    obs = NodeObserver(core)
    caplog.set_level(logging.INFO, logger="kraftd.raft")
    drive(obs, RequestReceived(0, 1, m.begin_quorum_request("c", ReplicaKey(2), 1, 1)))
    fetch = m.fetch_request("c", ReplicaKey(100), 1, 0, 0, 0, 8 << 20, 0)
    drive(obs, Tick(10_000) if late == "tick" else RequestReceived(10_000, 2, fetch))
    assert (
        "follower in epoch 1 -> prospective in epoch 1: fetch timeout: no fetch from leader 1" in caplog.text
    )
    assert "starting pre-vote (KIP-996) for epoch 2" in caplog.text


def test_window_rate_avg_max_forget_old_samples() -> None:
    now = [100.0]
    w = Window(clock=lambda: now[0])
    w.add(10)
    now[0] += 10
    w.add(30)
    assert (w.avg(), w.max()) == (20, 30) and w.rate() == pytest.approx(40 / 10)
    now[0] += 25  # the first sample is now 35 s old
    assert (w.avg(), w.max()) == (30, 30)


def test_rate_limiter_counts_what_it_suppressed() -> None:
    now = [0.0]
    r = RateLimiter(30, clock=lambda: now[0])
    assert r.allow("k") and not r.allow("k") and not r.allow("k")
    now[0] = 31
    assert r.allow("k") and r.suppressed("k") == " (2 similar suppressed)" and r.suppressed("k") == ""
