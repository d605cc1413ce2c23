"""The raft metric uncommitted-voter-change (Kafka's KafkaRaftMetrics): 1 while the leader has a voter change in
progress, 0 otherwise."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kraftd.shell.observe.metrics import raft_values
from kraftd.shell.observe.observer import NodeObserver
from tests.helpers.core import add_request, ask, caught_up, leader


def test_uncommitted_voter_change_is_one_while_an_add_is_in_progress() -> None:
    core = leader()
    node: Any = SimpleNamespace(core=core, observer=NodeObserver(core))
    assert raft_values(node)["uncommitted_voter_change"] == 0.0
    caught_up(core)
    ask(core, add_request())
    assert raft_values(node)["uncommitted_voter_change"] == 1.0
