"""A Fetch answer on the leader's fast path pays no per-answer lookups of what never changes (issue 25):
its metric children are looked up once per api, its own advertised endpoint is derived once per config."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from generated.fetch_response import FetchResponse
from kraftd.config import KraftConfig, load_config
from kraftd.shell.net import membership
from kraftd.shell.observe.metrics import NodeMetrics
from tests.daemon.cluster import free_ports
from tests.daemon.conftest import write_properties


def test_request_children_are_looked_up_once_and_count() -> None:
    metrics = NodeMetrics()
    count, latency = metrics.children("Fetch")
    assert metrics.children("Fetch") == (count, latency)
    for _ in range(3):
        c, h = metrics.children("Fetch")
        c.inc()
        h.observe(0.001)
    assert (
        metrics.registry.get_sample_value(
            "kafka_network_request_metrics_requests_total", {"request": "Fetch"}
        )
        == 3
    )
    n = metrics.registry.get_sample_value(
        "kafka_network_request_metrics_total_time_seconds_count", {"request": "Fetch"}
    )
    assert n == 3


def test_the_leader_advertises_itself_from_one_derivation_per_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (port,) = free_ports(1)
    write_properties(tmp_path / "s.properties", 1, port, tmp_path / "d", voters=f"1@127.0.0.1:{port}")
    config = load_config(tmp_path / "s.properties")
    derived = [0]
    real = KraftConfig.advertised_controller_listeners

    def counting(self: KraftConfig) -> Any:
        derived[0] += 1
        return real.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(KraftConfig, "advertised_controller_listeners", property(counting))
    node: Any = SimpleNamespace(config=config, core=SimpleNamespace(leader_id=lambda: 1))
    for _ in range(5):
        resp = FetchResponse()
        membership.advertise_leader(node, 16, resp)
        assert [(e.node_id, e.host, e.port) for e in resp.node_endpoints] == [(1, "127.0.0.1", port)]
    assert derived[0] == 1
